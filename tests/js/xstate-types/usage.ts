// Compiles under `tsc --strict` against execstore/xstate's declarations (tests/js/xstate-types.test.mjs).
import { Store } from "execstore";
import {
  createDurableActor,
  durableRef,
  relay,
  relayEmits,
  sweepTimers,
  persistedSnapshot,
  XStateStoreError,
  type PersistedSnapshot,
  type RelayResult,
  type ScheduledEvent,
  type SendResult,
} from "execstore/xstate";
import { assign, sendTo, setup } from "xstate";

const machine = setup({
  types: { context: {} as { n: number }, events: {} as { type: "INC" } | { type: "SET"; to: number }, input: {} as { start: number } },
}).createMachine({
  id: "counter",
  context: ({ input }) => ({ n: input.start }),
  on: {
    INC: { actions: assign({ n: ({ context }) => context.n + 1 }) },
    SET: { actions: assign({ n: ({ event }) => event.to }) },
  },
});

const store = Store.memory();
const actor = createDurableActor(store, machine, { id: "c-1", version: "1", input: { start: 3 }, now: () => 0 });
const result: SendResult = actor.send({ type: "SET", to: 5 }, { id: "e-1" });
if (!result.applied) {
  const reason: "duplicate" | "finished" | "not-due" | "stale" | "not-parent" = result.reason;
  void reason;
}
const snapshot: PersistedSnapshot = actor.getPersistedSnapshot();
const again: PersistedSnapshot = persistedSnapshot(result.execution);
const pending: ScheduledEvent[] = actor.scheduled();
const fired: number = sweepTimers(store, { counter: { machine, version: "1" } }, { now: 1000 });
const delivered: Promise<number> = relayEmits(store, async (entry) => {
  const kind: string = entry.event.kind;
  void kind;
});
try {
  createDurableActor(store, machine, { id: "c-1", version: "2" });
} catch (e) {
  if (e instanceof XStateStoreError && e.code === "VERSION_MISMATCH") {
    const stored: string | null | undefined = e.stored;
    void stored;
  }
}
createDurableActor(store, machine, {
  id: "c-1",
  version: "2",
  migrate: (s, { from, to }) => ({ ...s, status: s.status, migrated: `${from}->${to}` }),
});
const notifier = setup({}).createMachine({
  id: "notifier",
  on: { PING: { actions: sendTo(() => durableRef("c-1"), { type: "INC" }) } },
});
const relayed: Promise<RelayResult> = relay(store, {
  machines: { counter: { machine, version: "1" }, notifier: { machine: notifier, version: "1" } },
  deliver: (entry) => entry.target_id !== null,
  limit: 50,
  max: 1000,
});
const one: number = sweepTimers(store, new Map([["counter", { machine, version: "1" }]]), { now: 0, max: 1 });
for (const entry of store.pendingOutbox(null, 10)) {
  const received: SendResult = actor.receive(entry);
  void received;
}
void [snapshot, again, pending, fired, delivered, relayed, one];
