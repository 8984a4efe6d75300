//! Definition documents: kept once per (id, fqn), an equal put again changes nothing, a
//! different one is refused, bad input changes nothing, and a purge of an execution of that
//! definition leaves its document.

use serde_json::json;

use super::{code, created, scope};
use crate::executions::{DefinitionDoc, ExecutionStore};

fn doc(id: &str, fqn: &str, document: serde_json::Value, first_seen: f64) -> DefinitionDoc {
    DefinitionDoc {
        definition_id: id.into(),
        definition_fqn: fqn.into(),
        document,
        first_seen,
    }
}

/// A backend with [`crate::executions::Capabilities::definitions`] keeps each (id, fqn)'s
/// first document; one without answers the documented refusal and has none.
pub fn definitions_kept_once_per_version(store: &dyn ExecutionStore) {
    let p = scope("definitions");
    let id = format!("{p}order");
    let chart = json!({
        "id": "order", "type": "compound", "initial": "idle",
        "states": {"idle": {"on": {"GO": [{"target": ["#order.done"]}]}}, "done": {"type": "final"}},
        "odd": "<b>é\u{1F600}\"'\\</b>", "n": 1.5
    });
    let first = doc(&id, "order@1", chart.clone(), 1_700_000_000.25);

    if !store.capabilities().definitions {
        assert_eq!(
            code(store.put_definition(&first)),
            "BACKEND",
            "a put where none are kept"
        );
        assert_eq!(store.get_definition(&id, "order@1").expect("get"), None);
        return;
    }

    assert_eq!(
        store.get_definition(&id, "order@1").expect("get"),
        None,
        "nothing yet"
    );
    assert!(store.put_definition(&first).expect("first put"), "stored now");
    assert_eq!(
        store.get_definition(&id, "order@1").expect("get"),
        Some(first.clone())
    );

    // The same JSON again, keys in another order and a later time: nothing changes.
    let mut reordered = serde_json::Map::new();
    if let serde_json::Value::Object(map) = &chart {
        for (k, v) in map.iter().rev() {
            reordered.insert(k.clone(), v.clone());
        }
    }
    let again = doc(&id, "order@1", reordered.into(), 1_800_000_000.0);
    assert!(
        !store.put_definition(&again).expect("equal put"),
        "an equal document is not stored again"
    );
    assert_eq!(
        store
            .get_definition(&id, "order@1")
            .expect("get")
            .map(|d| d.first_seen),
        Some(first.first_seen),
        "the first time stays"
    );

    // A different document under the same key is refused and changes nothing.
    let other = doc(
        &id,
        "order@1",
        json!({"id": "order", "states": {}}),
        1_800_000_000.0,
    );
    assert_eq!(code(store.put_definition(&other)), "ALREADY_EXISTS");
    assert_eq!(
        store.get_definition(&id, "order@1").expect("get"),
        Some(first.clone())
    );

    // Another version, and another id, are other keys.
    let v2 = doc(&id, "order@2", json!({"id": "order", "states": {}}), 5.0);
    assert!(store.put_definition(&v2).expect("v2"));
    assert_eq!(store.get_definition(&id, "order@2").expect("get"), Some(v2));
    assert_eq!(
        store.get_definition(&format!("{id}x"), "order@1").expect("get"),
        None
    );
    assert_eq!(store.get_definition(&id, "order@3").expect("get"), None);

    // Bad input: typed, nothing stored.
    for bad in [
        doc("", "f", json!({}), 1.0),
        doc(&format!("{p}bad"), "", json!({}), 1.0),
        doc(&format!("{p}bad"), "f", json!({}), f64::NAN),
        doc(&format!("{p}bad\0"), "f", json!({}), 1.0),
    ] {
        assert_eq!(code(store.put_definition(&bad)), "INVALID_INPUT", "{bad:?}");
    }
    assert_eq!(store.get_definition(&format!("{p}bad"), "f").expect("get"), None);

    // An execution of the definition, purged: the document stays.
    let mut exe = created(store, &format!("{p}exe"), &id);
    exe.definition_fqn = Some("order@1".into());
    store.save(&mut exe).expect("save");
    assert!(store.purge(&exe.id, exe.version).expect("purge"));
    assert_eq!(store.get_definition(&id, "order@1").expect("get"), Some(first));
}
