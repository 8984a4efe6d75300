// The two-tab test's worker: a tally machine that counts each event and keeps its tag.
import { assign, createMachine } from "xstate";
import { serveXState } from "execstore/xstate-worker";

const tally = createMachine({
  id: "tally",
  initial: "open",
  context: { count: 0, tags: [] },
  states: {
    open: {
      on: { ADD: { actions: assign({ count: ({ context }) => context.count + 1, tags: ({ context, event }) => [...context.tags, event.tag] }) } },
    },
  },
});

serveXState({ machines: { tally: { machine: tally, version: "1" } } });
