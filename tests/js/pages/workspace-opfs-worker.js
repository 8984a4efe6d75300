// The dedicated worker of workspace-opfs.html: imports the package and runs the code the
// test sends (an async function body; `api` holds the package's exports and a `state` object
// kept between calls). Errors come back as plain objects with their `code` and fields.
const loading = import("/crates/execstore-wasm/npm/index.js");
const AsyncFunction = (async () => {}).constructor;
const state = {};

function plain(error) {
  if (error === null || typeof error !== "object") return { name: "Error", message: String(error) };
  const out = { name: error.name, message: String(error.message) };
  for (const key of Object.keys(error)) out[key] = error[key];
  return out;
}

self.onmessage = async (event) => {
  const { id, code } = event.data;
  try {
    const api = { ...(await loading), state };
    const result = await new AsyncFunction("api", code)(api);
    self.postMessage({ id, ok: true, result });
  } catch (error) {
    self.postMessage({ id, ok: false, error: plain(error) });
  }
};
