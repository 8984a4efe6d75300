// The demo's order machine: an order waits for its payment (an invoked child machine) at most
// `timeoutMs` (an `after`); paid, it can ship. Each outcome is an emitted event, relayed to
// the page once.
import { assign, createMachine, emit, sendTo } from "xstate";

/** The invoked child: a payment that waits for its authorization. */
export const paymentMachine = createMachine({
  id: "payment",
  initial: "pending",
  context: ({ input }) => ({ amount: input?.amount ?? 0 }),
  states: {
    pending: { on: { AUTHORIZE: "authorized" } },
    authorized: { type: "final" },
  },
  output: ({ context }) => ({ amount: context.amount }),
});

export const orderMachine = createMachine({
  id: "order",
  initial: "cart",
  context: ({ input }) => ({ timeoutMs: input?.timeoutMs ?? 10000, items: 0, paid: 0 }),
  states: {
    cart: {
      on: {
        ADD: { actions: assign({ items: ({ context }) => context.items + 1 }) },
        PLACE: { target: "awaitingPayment", guard: ({ context }) => context.items > 0 },
      },
    },
    awaitingPayment: {
      invoke: {
        id: "payment",
        src: paymentMachine,
        input: ({ context }) => ({ amount: context.items * 5 }),
        onDone: {
          target: "paid",
          actions: [
            assign({ paid: ({ event }) => event.output.amount }),
            emit(({ event }) => ({ type: "order.paid", amount: event.output.amount })),
          ],
        },
      },
      on: { PAY: { actions: sendTo("payment", { type: "AUTHORIZE" }) } },
      after: {
        paymentTimeout: { target: "cancelled", actions: emit({ type: "order.cancelled", reason: "payment timed out" }) },
      },
    },
    paid: { on: { SHIP: { target: "shipped", actions: emit({ type: "order.shipped" }) } } },
    shipped: { type: "final" },
    cancelled: { type: "final" },
  },
}, {
  delays: { paymentTimeout: ({ context }) => context.timeoutMs },
});
