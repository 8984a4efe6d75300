// Must NOT compile: each line is a misuse the declarations catch (tests/js/types.test.mjs
// checks that tsc reports an error on every line marked `// error`).
import { Store } from "execstore";
import { openOpfs } from "execstore/client";

const store = Store.memory();
store.commit({ id: 1, definition_id: "d" }); // error
store.commit({ definition_id: "d" }); // error
store.commit({ id: "a", definition_id: "d", version: "1" }); // error
store.commit({ id: "a", definition_id: "d" }, { timers: [{ action: "later", path: "p" }] }); // error
store.commit({ id: "a", definition_id: "d" }, { procesed_event_id: "x" }); // error
store.listExecutions({ status: ["WALKING"] }); // error
const n: string = store.ackOutboxMany([1]); // error
store.load(7); // error
const p: number = openOpfs("x"); // error
void n;
void p;
