// The machine's definition as JSON, and keeping it as the store's definition document of
// (machine id, fqn) for the monitor's picture (docs/xstate.md, "Where the definition lives").

const json = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
const isPlainObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

const definitions = new WeakMap();

const keptDefinitions = new WeakMap();

/**
 * Keeps the machine's definition as the store's definition document of (machine id, fqn),
 * once per store object and version: an equal one again changes nothing, a different one
 * under the same version throws the store's `ALREADY_EXISTS` (change the version with the
 * definition). A store that keeps none, or a definition that is not JSON, is skipped.
 */
export function keepDefinition(store, machine, fqn, now) {
  if (typeof store.putDefinition !== "function") return;
  let kept = keptDefinitions.get(store);
  if (kept === undefined) {
    if (store.capabilities().definitions !== true) return;
    kept = new Set();
    keptDefinitions.set(store, kept);
  }
  const key = `${machine.id}\u0000${fqn}`;
  if (kept.has(key)) return;
  const definition = definitionJson(machine);
  if (definition === null) return;
  store.putDefinition(machine.id, fqn, definition, now / 1000);
  kept.add(key);
}

/** Adds each state node's `always` transitions (XState's `definition` leaves them out). */
function withAlways(definition, node) {
  if (!isPlainObject(definition) || node == null) return;
  if (Array.isArray(node.always) && node.always.length) definition.always = json(node.always);
  for (const [key, child] of Object.entries(node.states ?? {})) withAlways(definition.states?.[key], child);
}

/**
 * The definition as JSON (functions dropped), each state's `always` transitions added, or
 * null when it does not serialize.
 */
export function definitionJson(machine) {
  if (!definitions.has(machine)) {
    let definition = null;
    try {
      definition = json(machine.definition) ?? null;
      withAlways(definition, machine.root);
    } catch {
      // a definition that does not serialize is not stored
    }
    definitions.set(machine, definition);
  }
  return definitions.get(machine);
}
