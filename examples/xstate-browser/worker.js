// The demo's dedicated worker: it owns the OPFS store and runs the order machine durably.
import { serveXState } from "execstore/xstate-worker";
import { orderMachine } from "./machines.js";

serveXState({ machines: { [orderMachine.id]: { machine: orderMachine, version: "1" } } });
