// A child process for node-file.test.mjs and node-file-kill.test.mjs, over Store.openFile:
//   hold PATH        opens PATH, commits `held-1`, prints `ready`, and waits to be killed
//   commit PATH N    opens PATH, commits c-0 .. c-(N-1), prints `ready`, and SIGKILLs itself
//   loop PATH SYNC   opens PATH (synchronous SYNC), prints `ready`, then commits steps to one
//                    execution forever, printing `ack V` after each commit returned at version V
import { Store } from "execstore";

const [mode, path, arg] = process.argv.slice(2);

if (mode === "hold") {
  const store = await Store.openFile(path, { waitMs: 0 });
  store.commit({ id: "held-1", definition_id: "d", status: "RUNNING", version: 0 });
  process.stdout.write("ready\n");
  setInterval(() => {}, 1000);
} else if (mode === "commit") {
  const store = await Store.openFile(path, { waitMs: 0 });
  for (let i = 0; i < Number(arg); i++) {
    store.commit({ id: `c-${i}`, definition_id: "d", status: "RUNNING", version: 0 }, { processed_event_id: `in-${i}` });
  }
  process.stdout.write("ready\n", () => process.kill(process.pid, "SIGKILL"));
} else if (mode === "loop") {
  const store = await Store.openFile(path, { waitMs: 10_000, synchronous: arg });
  const exe = store.load("k") ?? { id: "k", definition_id: "kill", status: "RUNNING", version: 0, context: { step: 0 } };
  process.stdout.write("ready\n");
  for (;;) {
    const step = exe.version + 1;
    exe.context = { step, pad: "x".repeat(200 + (step % 7) * 300) };
    store.commit(exe, {
      emits: [{ target_id: null, event: { id: `k-e-${step}`, kind: "Step", data: { step } } }],
      processed_event_id: `k-in-${step}`,
      timers: [{ action: "schedule", path: `t${step % 3}`, fire_at: 1_700_000_000 + step }],
      trace: { event_kind: "Step", step },
    });
    // Synchronous write: the line is with the parent before the next commit starts.
    process.stdout.write(`ack ${exe.version}\n`);
    if (step % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
} else {
  throw new Error(`unknown mode ${mode}`);
}
