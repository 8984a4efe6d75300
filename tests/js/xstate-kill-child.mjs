// The child process of tests/js/xstate-kill.test.mjs: runs the kill script over the store
// file argv[2] from its start, printing each op it finished; the parent SIGKILLs it anywhere.
import { Store } from "execstore";

import { run, script } from "./xstate-kill-script.mjs";

const store = await Store.openFile(process.argv[2]);
process.stdout.write("open\n");
await run(store, script(), (i) => process.stdout.write(`op ${i}\n`));
store.close();
process.stdout.write("done\n");
