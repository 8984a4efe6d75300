// The monitor's views: one row each. The header's nav, the routes (`?view=<id>`), the page
// title, which views a store shows (by the contract whose data it holds) and what the shell
// calls on a route change, a refresh or a key all come from this table.
//
// A view is a module exporting `show(before)` (draw the route `state.route` into #main;
// `before`: the route shown until now, or null), `refresh()` (read again, quietly: live
// updates, `r`, after a write) and `leave()` (another view is shown: stop what runs), and
// optionally `onKey(e)` (`true`: it took the key) and `init(context)` (once, at start).
// A new view is its module and its row here.

import * as executions from "./executions.js";
import * as queue from "./queue.js";
import * as workspaces from "./workspaces.js";
import * as deadLetters from "./dead-letters.js";
import * as definition from "./definition.js";
import * as metrics from "./metrics.js";
import * as audit from "./audit.js";

/**
 * `id`: the URL's `view`; `title`: the nav's and the page's; `holds`: the contract it shows
 * (`executions` or `workspaces`: hidden where the store holds none; `any`: always shown); `nav`: listed in the
 * header. The first row is the default view.
 */
export const VIEWS = [
  { id: "executions", title: "Executions", holds: "executions", nav: true, module: executions },
  { id: "outbox", title: "Outbox", holds: "executions", nav: true, module: queue },
  { id: "timers", title: "Timers", holds: "executions", nav: true, module: queue },
  { id: "spawns", title: "Spawns", holds: "executions", nav: true, module: queue },
  { id: "workspaces", title: "Workspaces", holds: "workspaces", nav: true, module: workspaces },
  { id: "dead-letters", title: "Dead letters", holds: "workspaces", nav: true, module: deadLetters },
  { id: "metrics", title: "Metrics", holds: "any", nav: true, module: metrics },
  { id: "definition", title: "Definition", holds: "executions", nav: false, module: definition },
  { id: "audit", title: "Audit", holds: "any", nav: true, module: audit },
];
