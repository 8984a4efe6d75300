// Each line ending in "// error" must be a type error (tests/js/xstate-types.test.mjs).
import { Store } from "execstore";
import { createDurableActor, durableRef, relay, sweepTimers } from "execstore/xstate";
import { setup } from "xstate";

const machine = setup({
  types: { events: {} as { type: "GO" }, input: {} as { start: number } },
}).createMachine({ id: "m", initial: "a", states: { a: { on: { GO: "a" } } } });
const store = Store.memory();

const actor = createDurableActor(store, machine, { id: "x", version: "1", input: { start: 1 } });
actor.send({ type: "GO" });
actor.send({ type: "STOP" }); // error
actor.send({ type: "GO" }, { id: 7 }); // error
createDurableActor(store, machine, { id: "x" }); // error
createDurableActor(store, machine, { id: "x", version: 1 }); // error
createDurableActor(store, machine, { id: "x", version: "1", input: { start: "1" } }); // error
createDurableActor({}, machine, { id: "x", version: "1" }); // error
sweepTimers(store, { m: { machine } }); // error
const status: "DONE" = actor.status; // error
actor.fireDue("now"); // error
relay(store, { limit: "10" }); // error
relay(store, { deliver: (entry) => entry.event.kind.length }); // error
relay(store, { machines: { m: { machine } } }); // error
durableRef(7); // error
actor.receive({ type: "GO" }); // error
void status;
