// The XState machine of the monitor's XState tests (xstate.test.mjs here, and the fixture of
// crates/execstore-monitor-api/src/chart/tests.rs, written by `node xstate-order.mjs --fixture`):
// nested and parallel states, initial and final states, events, a guard, `after`, `always`,
// an invoked child machine's onDone and onError, and state names that are markup.
import { fileURLToPath } from "node:url";
import { writeFileSync } from "node:fs";
import { assign, createMachine, emit, sendParent, sendTo, setup } from "xstate";

/** The invoked payment: CHARGE ends it (onDone), DECLINE fails it (onError). */
export const payment = createMachine({
  id: "payment",
  initial: "pending",
  states: {
    pending: { on: { CHARGE: "paid", DECLINE: "declined" } },
    paid: { type: "final" },
    declined: { entry: sendParent({ type: "DECLINED" }), type: "final" },
  },
});

export const order = setup({
  guards: { big: ({ context }) => context.items > 2 },
  actors: { payment },
}).createMachine({
  id: "order",
  initial: "cart",
  context: { items: 0 },
  states: {
    cart: {
      on: {
        ADD: { actions: assign({ items: ({ context }) => context.items + 1 }) },
        CHECKOUT: "paying",
      },
    },
    paying: {
      initial: "card",
      invoke: { id: "pay", src: "payment", onDone: "fulfil", onError: "failed" },
      after: { 60000: "cancelled" },
      on: {
        DECLINED: "failed",
        CHARGE: { actions: sendTo("pay", { type: "CHARGE" }) },
        DECLINE: { actions: sendTo("pay", { type: "DECLINE" }) },
      },
      states: {
        card: { on: { SWITCH: "wallet" } },
        wallet: { on: { SWITCH: "card" } },
      },
    },
    fulfil: {
      type: "parallel",
      states: {
        pack: { initial: "picking", states: { picking: { on: { PACKED: "packed" } }, packed: { type: "final" } } },
        ship: { initial: "label", states: { label: { on: { SHIPPED: "sent" } }, sent: { type: "final" } } },
      },
      onDone: { target: "checking", actions: emit({ type: "order.fulfilled" }) },
    },
    checking: { always: [{ guard: "big", target: "review" }, { target: "done" }] },
    review: { on: { APPROVE: "done" } },
    "<b>odd</b>": { on: { BACK: "cart" } },
    done: { type: "final" },
    failed: { type: "final" },
    cancelled: { type: "final" },
  },
});

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === "--fixture") {
  const { definitionJson } = await import("execstore/xstate");
  const out = process.argv[3];
  writeFileSync(out, `${JSON.stringify(definitionJson(order), null, 1)}\n`);
  console.log(`wrote ${out}`);
}
