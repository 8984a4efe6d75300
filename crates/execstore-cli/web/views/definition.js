// A definition's statechart over every execution of it (`?view=definition&definition=D`),
// drawn by graph.js.

import { $ } from "../dom.js";
import * as graph from "../graph.js";
import { api, pagerKeys, state } from "../shell.js";

export function show() {
  graph.showDefinition(api, $("#main"), state.route.definition);
}

export function refresh() {
  graph.refreshDefinition(api, $("#main"), state.route.definition);
}

export function leave() {}

export const onKey = pagerKeys;
