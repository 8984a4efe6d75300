// Machines of the durable-XState tests (tests/js/xstate*.test.mjs): each with the events a
// random sequence draws from. Between them: nested and parallel states, guards, `after`,
// delayed raises and their cancel, `always`, deep history, an invoked child machine with
// its own `after`, sendTo/sendParent inside the execution, `emit`, final states.
import { assign, cancel, createMachine, emit, raise, sendParent, sendTo, setup, spawnChild, stateIn, stopChild } from "xstate";

/** A traffic light: nested states, `after` at two levels, a guard on a counter, emit. */
export const light = setup({
  guards: { tired: ({ context }) => context.cycles >= 3 },
}).createMachine({
  id: "light",
  initial: "green",
  context: { cycles: 0 },
  states: {
    green: {
      after: { 1000: "yellow" },
      on: { EMERGENCY: "red", SKIP: "yellow" },
    },
    yellow: {
      after: { 300: "red" },
      on: { EMERGENCY: "red" },
    },
    red: {
      initial: "walk",
      entry: assign({ cycles: ({ context }) => context.cycles + 1 }),
      states: {
        walk: { after: { 400: "wait" }, on: { PED: "wait" } },
        wait: { after: { 200: "stop" } },
        stop: { type: "final" },
      },
      onDone: [
        { guard: "tired", target: "off", actions: emit({ type: "light.off" }) },
        { target: "green", actions: emit(({ context }) => ({ type: "light.cycle", cycles: context.cycles })) },
      ],
      on: { RESET: { target: "green", actions: assign({ cycles: 0 }) } },
    },
    off: { on: { POWER: { target: "green", actions: assign({ cycles: 0 }) } } },
  },
});

/** An editor: parallel regions, nested states, an `in` guard, `after` in one region. */
export const editor = createMachine({
  id: "editor",
  type: "parallel",
  context: { saves: 0, edits: 0 },
  states: {
    text: {
      initial: "clean",
      states: {
        clean: { on: { EDIT: { target: "dirty", actions: assign({ edits: ({ context }) => context.edits + 1 }) } } },
        dirty: {
          after: { 500: { target: "saving" } },
          on: {
            EDIT: { actions: assign({ edits: ({ context }) => context.edits + 1 }), target: "dirty", reenter: true },
            SAVE: "saving",
          },
        },
        saving: {
          after: {
            250: { target: "clean", actions: [assign({ saves: ({ context }) => context.saves + 1 }), emit({ type: "saved" })] },
          },
          on: { EDIT: { target: "dirty", actions: assign({ edits: ({ context }) => context.edits + 1 }) } },
        },
      },
    },
    format: {
      type: "parallel",
      states: {
        bold: { initial: "off", states: { off: { on: { BOLD: "on" } }, on: { on: { BOLD: "off" } } } },
        italic: {
          initial: "off",
          states: {
            off: { on: { ITALIC: { guard: ({ context }) => context.edits % 2 === 0, target: "on" } } },
            on: { on: { ITALIC: "off" }, after: { 700: "off" } },
          },
        },
      },
    },
    mode: {
      initial: "edit",
      states: {
        edit: { on: { PREVIEW: { target: "preview", guard: stateIn({ text: "clean" }) } } },
        preview: { on: { PREVIEW: "edit" } },
      },
    },
  },
});

/** A payment: the child machine `order` invokes; its own `after`, sendParent, output. */
export const payment = setup({}).createMachine({
  id: "payment",
  initial: "pending",
  context: ({ input }) => ({ amount: input?.amount ?? 0, attempts: 0 }),
  states: {
    pending: {
      after: { 600: { target: "failed" } },
      on: {
        CHARGE: [
          { guard: ({ context }) => context.attempts >= 1, target: "paid" },
          { actions: [assign({ attempts: ({ context }) => context.attempts + 1 }), sendParent({ type: "PAYMENT.RETRY" })] },
        ],
      },
    },
    paid: { type: "final" },
    failed: { type: "final" },
  },
  output: ({ context }) => ({ amount: context.amount, attempts: context.attempts }),
});

/** An order: an invoked child machine (payment), sendTo it, onDone with guards, emit, `after`. */
export const order = setup({ actors: { payment } }).createMachine({
  id: "order",
  initial: "cart",
  context: { items: 0, retries: 0, paid: null },
  states: {
    cart: {
      on: {
        ADD: { actions: assign({ items: ({ context }) => context.items + 1 }) },
        CHECKOUT: { guard: ({ context }) => context.items > 0, target: "paying" },
      },
    },
    paying: {
      invoke: {
        id: "pay",
        src: "payment",
        input: ({ context }) => ({ amount: context.items * 5 }),
        onDone: [
          {
            guard: ({ event }) => event.output.attempts >= 1 && event.output.amount > 0,
            target: "shipping",
            actions: [assign({ paid: ({ event }) => event.output.amount }), emit(({ event }) => ({ type: "order.paid", amount: event.output.amount }))],
          },
          { target: "cart", actions: emit({ type: "order.payment_failed" }) },
        ],
      },
      on: {
        CHARGE: { actions: sendTo("pay", { type: "CHARGE" }) },
        "PAYMENT.RETRY": { actions: assign({ retries: ({ context }) => context.retries + 1 }) },
        CANCEL: "cancelled",
      },
    },
    shipping: {
      after: { 1500: { target: "delivered", actions: emit({ type: "order.delivered" }) } },
      on: { CANCEL: "cancelled" },
    },
    delivered: { type: "final" },
    cancelled: { type: "final", entry: emit({ type: "order.cancelled" }) },
  },
});

/** A poller: delayed raises with ids, cancel, `always`, guards on context, emit. */
export const poller = setup({}).createMachine({
  id: "poller",
  initial: "idle",
  context: { polls: 0, errors: 0 },
  states: {
    idle: { on: { START: "polling" } },
    polling: {
      entry: raise({ type: "TICK" }, { delay: 350, id: "tick" }),
      on: {
        TICK: {
          target: "polling",
          reenter: true,
          actions: [assign({ polls: ({ context }) => context.polls + 1 }), emit(({ context }) => ({ type: "poll", n: context.polls }))],
        },
        FAIL: { target: "checking", actions: assign({ errors: ({ context }) => context.errors + 1 }) },
        PAUSE: { target: "idle", actions: cancel("tick") },
        HURRY: { actions: [cancel("tick"), raise({ type: "TICK" }, { delay: 50, id: "tick" })] },
      },
    },
    checking: {
      always: [{ guard: ({ context }) => context.errors >= 3, target: "broken" }, { target: "polling" }],
    },
    broken: { on: { REPAIR: { target: "idle", actions: assign({ errors: 0 }) } }, after: { 2000: "idle" } },
  },
});

/** A wizard: deep history, nested compound states, `after` leaving a step, a final state. */
export const wizard = createMachine({
  id: "wizard",
  initial: "steps",
  context: { help: 0 },
  states: {
    steps: {
      initial: "one",
      states: {
        one: { on: { NEXT: "two" } },
        two: {
          initial: "a",
          states: { a: { on: { SUB: "b" } }, b: { after: { 800: "a" }, on: { SUB: "a" } } },
          on: { NEXT: "three", BACK: "one" },
        },
        three: { on: { BACK: "two", FINISH: "#wizard.done" } },
        hist: { type: "history", history: "deep" },
      },
      on: { HELP: { target: "help", actions: assign({ help: ({ context }) => context.help + 1 }) } },
    },
    help: {
      entry: emit({ type: "help.opened" }),
      after: { 1200: "steps.hist" },
      on: { CLOSE: "steps.hist" },
    },
    done: { type: "final" },
  },
});

/** A ticker: the grandchild a worker invokes (a child execution of a child execution). */
export const ticker = createMachine({
  id: "ticker",
  initial: "ticking",
  states: { ticking: { after: { 150: "rang" } }, rang: { type: "final" } },
  output: { rang: true },
});

/** A worker: the child machine `fleet` spawns by name; sendParent, an invoked grandchild, a crash, a final state. */
export const worker = setup({ actors: { ticker } }).createMachine({
  id: "worker",
  initial: "idle",
  context: ({ input }) => ({ n: input?.n ?? 0, jobs: 0, ticks: 0 }),
  states: {
    idle: { on: { JOB: { target: "busy", actions: assign({ jobs: ({ context }) => context.jobs + 1 }) }, QUIT: "quit" } },
    busy: {
      invoke: { id: "tick", src: "ticker", onDone: { actions: assign({ ticks: ({ context }) => context.ticks + 1 }) } },
      after: { 300: { target: "idle", actions: sendParent(({ context }) => ({ type: "WORKER.DONE", n: context.n })) } },
      on: {
        JOB: { actions: assign({ jobs: ({ context }) => context.jobs + 1 }) },
        CRASH: {
          actions: () => {
            throw new Error("worker crashed");
          },
        },
      },
    },
    quit: { type: "final" },
  },
  output: ({ context }) => ({ n: context.n, jobs: context.jobs }),
});

/** A fleet: spawned child machines by name, sendTo them, stopChild, their done and error, a final state that stops them. */
export const fleet = setup({ actors: { worker } }).createMachine({
  id: "fleet",
  initial: "running",
  context: { a: false, b: false, done: 0, quits: 0, failed: 0, errors: [] },
  states: {
    running: {
      on: {
        SPAWN_A: { guard: ({ context }) => !context.a, actions: [spawnChild("worker", { id: "a", input: { n: 1 } }), assign({ a: true })] },
        SPAWN_B: { guard: ({ context }) => !context.b, actions: [spawnChild("worker", { id: "b", input: { n: 2 } }), assign({ b: true })] },
        JOB_A: { guard: ({ context }) => context.a, actions: sendTo("a", { type: "JOB" }) },
        JOB_B: { guard: ({ context }) => context.b, actions: sendTo("b", { type: "JOB" }) },
        CRASH_A: { guard: ({ context }) => context.a, actions: sendTo("a", { type: "CRASH" }) },
        QUIT_B: { guard: ({ context }) => context.b, actions: sendTo("b", { type: "QUIT" }) },
        STOP_A: { guard: ({ context }) => context.a, actions: [stopChild("a"), assign({ a: false })] },
        "WORKER.DONE": { actions: assign({ done: ({ context }) => context.done + 1 }) },
        "xstate.done.actor.b": { actions: [assign({ b: false, quits: ({ context }) => context.quits + 1 }), emit({ type: "fleet.quit" })] },
        "xstate.error.actor.a": {
          actions: assign({ a: false, failed: ({ context }) => context.failed + 1, errors: ({ context, event }) => [...context.errors, event.error.message] }),
        },
        FINISH: "closed",
      },
    },
    closed: { type: "final" },
  },
});

/** Each machine with the events a random sequence sends it. */
export const MACHINES = [
  { machine: light, events: ["EMERGENCY", "SKIP", "PED", "RESET", "POWER"] },
  { machine: editor, events: ["EDIT", "SAVE", "BOLD", "ITALIC", "PREVIEW"] },
  { machine: order, events: ["ADD", "ADD", "CHECKOUT", "CHARGE", "CHARGE", "CANCEL"] },
  { machine: poller, events: ["START", "FAIL", "PAUSE", "HURRY"] },
  { machine: wizard, events: ["NEXT", "BACK", "SUB", "HELP", "CLOSE", "FINISH"] },
  {
    machine: fleet,
    events: ["SPAWN_A", "SPAWN_B", "SPAWN_A", "SPAWN_B", "JOB_A", "JOB_B", "JOB_A", "JOB_B", "CRASH_A", "QUIT_B", "STOP_A", "FINISH"],
  },
];

/** A seeded generator of numbers in [0, 1) (mulberry32). */
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A clock for a plain XState actor: nothing fires until `advance(to)`, which fires what is
 * due in deadline order (ties in the order they were set), each at its own deadline.
 */
export class ManualClock {
  now = 0;
  #timers = new Map();
  #seq = 0;

  setTimeout(fn, ms) {
    const handle = ++this.#seq;
    this.#timers.set(handle, { fn, due: this.now + ms, seq: handle });
    return handle;
  }

  clearTimeout(handle) {
    this.#timers.delete(handle);
  }

  /** The deadlines of the timers still set, soonest first. */
  pending() {
    return [...this.#timers.values()].map((t) => t.due).sort((a, b) => a - b);
  }

  advance(to) {
    for (;;) {
      let next = null;
      for (const t of this.#timers.values()) {
        if (t.due <= to && (next === null || t.due < next.due || (t.due === next.due && t.seq < next.seq))) next = t;
      }
      if (next === null) break;
      this.#timers.delete(next.seq);
      this.now = next.due;
      next.fn();
    }
    this.now = to;
  }
}
