//! The read commands, over any [`ExecutionStore`].

use std::io::Write;

use execstore::{
    executions::{paging, ExecutionPage, ListQuery, TraceStep},
    kit::pyjson,
    ExecutionStore, StoreError,
};
use serde::Serialize;
use serde_json::Value;

use crate::args::{ListArgs, SeqPageArgs, TimersArgs};
use crate::error::Result;
use crate::table::{clean, fit, Table};
use crate::time;

/// The bound `timers` uses when not given one: every armed timer, however far off.
pub use execstore::kit::validate::ALL_TIMERS;

fn write_json(out: &mut dyn Write, value: &impl Serialize) -> Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

fn or_dash(s: Option<&str>) -> String {
    s.unwrap_or("-").to_owned()
}

/// Whether `list` was given a time filter or a search.
fn query_has_time_or_search(args: &ListArgs) -> bool {
    [
        args.created_after,
        args.created_before,
        args.updated_after,
        args.updated_before,
        args.finished_after,
        args.finished_before,
    ]
    .iter()
    .any(Option::is_some)
        || args.search.is_some()
        || args.filter.is_some()
}

fn stamp(t: Option<f64>) -> String {
    t.map_or_else(|| "-".to_owned(), time::utc)
}

/// `execstore list`. `prefixed`: whether the store was opened with a table prefix.
pub fn list(
    store: &dyn ExecutionStore,
    args: &ListArgs,
    prefixed: bool,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let mut query = ListQuery::new()
        .limit(args.limit)
        .cursor(args.cursor.clone())
        .roots_only(args.roots_only)
        .created_between(args.created_after, args.created_before)
        .updated_between(args.updated_after, args.updated_before)
        .finished_between(args.finished_after, args.finished_before)
        .order(args.order);
    query.search = args.search.clone();
    if !args.status.is_empty() {
        query = query.status(args.status.iter().copied());
    }
    if let Some(def) = &args.definition {
        query = query.definition(def.clone());
    }
    if let Some(text) = &args.filter {
        query = query.filter(execstore::executions::parse_where(text, time::now())?);
    }
    let page = if args.all {
        // Every page from the given cursor on (a store that hands back the cursor it was
        // given is an error, not an endless loop).
        let mut all = ExecutionPage::default();
        for page in paging::execution_pages(store, query) {
            let page = page?;
            all.items.extend(page.items);
            all.scan = page.scan;
        }
        all
    } else {
        store.list_executions(&query)?
    };
    if json {
        return write_json(out, &page);
    }
    if page.items.is_empty() {
        let unfiltered = args.status.is_empty()
            && args.definition.is_none()
            && args.cursor.is_none()
            && !query_has_time_or_search(args);
        if unfiltered && !prefixed {
            // harel's harel_* tables are found without --prefix: these are the bare ones.
            writeln!(out, "no executions (the store's tables are empty)")?;
        } else {
            writeln!(out, "no executions")?;
        }
        crate::search_commands::scan_note(&page.scan, out)?;
        return Ok(());
    }
    let mut table = Table::new(&[
        ("ID", 0),
        ("DEFINITION", 20),
        ("STATUS", 0),
        ("OUTCOME", 18),
        ("ACTIVE PATH", 40),
        ("VER", 0),
        ("PARENT", 14),
        ("UPDATED (UTC)", 0),
    ]);
    for s in &page.items {
        table.row(vec![
            s.id.clone(),
            s.definition_id.clone(),
            s.status.to_string(),
            or_dash(s.outcome.as_deref()),
            or_dash(s.active_path.as_deref()),
            s.version.to_string(),
            or_dash(s.parent_id.as_deref()),
            stamp(s.updated_at),
        ]);
    }
    table.write(out)?;
    match &page.next_cursor {
        Some(cursor) => writeln!(out, "{} shown; next page: --cursor {cursor}", page.items.len())?,
        None => writeln!(out, "{} shown", page.items.len())?,
    }
    crate::search_commands::scan_note(&page.scan, out)?;
    Ok(())
}

/// `execstore show ID`.
pub fn show(store: &dyn ExecutionStore, id: &str, json: bool, out: &mut dyn Write) -> Result<()> {
    let exe = store.load(id)?.ok_or_else(|| not_found(id))?;
    if json {
        return write_json(out, &exe);
    }
    let now = time::now();
    let when = |t: Option<f64>| match t {
        Some(t) => format!("{} UTC ({})", time::utc(t), time::ago(t, now)),
        None => "-".to_owned(),
    };
    let definition = match &exe.definition_fqn {
        Some(fqn) => format!("{} ({fqn})", exe.definition_id),
        None => exe.definition_id.clone(),
    };
    let mut fields: Vec<(&str, String)> = vec![
        ("id", exe.id.clone()),
        ("definition", definition),
        ("status", exe.status.to_string()),
        ("outcome", or_dash(exe.outcome.as_deref())),
        ("error", or_dash(exe.error.as_deref())),
        ("active path", or_dash(exe.active_path.as_deref())),
        (
            "root path",
            if exe.root_path.is_empty() {
                "-".into()
            } else {
                exe.root_path.clone()
            },
        ),
        ("version", exe.version.to_string()),
        ("events", format!("{} processed", exe.processed_events)),
        ("priority", exe.priority.to_string()),
        ("parent", or_dash(exe.parent_id.as_deref())),
        ("created", when(exe.created_at)),
        ("updated", when(exe.updated_at)),
        ("finished", when(exe.finished_at)),
        ("expires", when(exe.expires_at)),
    ];
    if !exe.history.is_empty() {
        fields.push(("history", Value::Object(exe.history.clone()).to_string()));
    }
    if !exe.invoke_seq.is_empty() {
        fields.push(("invoke seq", serde_json::to_string(&exe.invoke_seq)?));
    }
    if !exe.deferred.is_empty() {
        let kinds: Vec<&str> = exe.deferred.iter().map(|e| e.kind.as_str()).collect();
        fields.push(("deferred", kinds.join(", ")));
    }
    if !exe.children.is_empty() {
        let done = exe.children.values().filter(|c| c.finished).count();
        fields.push(("children", format!("{} ({done} finished)", exe.children.len())));
    }
    for (key, value) in &fields {
        writeln!(out, "{key:<12} {}", clean(value))?;
    }
    if !exe.children.is_empty() {
        writeln!(out)?;
        let mut table = Table::new(&[("CHILD", 0), ("ROOT PATH", 40), ("FINISHED", 0), ("OUTCOME", 20)]);
        for (cid, child) in &exe.children {
            table.row(vec![
                cid.clone(),
                child.root_path.clone(),
                if child.finished { "yes" } else { "no" }.into(),
                or_dash(child.outcome.as_deref()),
            ]);
        }
        table.write(out)?;
    }
    writeln!(out, "\ncontext:")?;
    write_json(out, &exe.context)
}

fn not_found(id: &str) -> StoreError {
    StoreError::NotFound {
        what: "execution",
        key: id.to_owned(),
    }
}

/// `execstore trace ID`.
pub fn trace(store: &dyn ExecutionStore, id: &str, json: bool, out: &mut dyn Write) -> Result<()> {
    // `NaN`, `Infinity` and lone surrogates harel wrote, shown as text.
    let steps: Vec<TraceStep> = store.read_trace(id)?.iter().map(pyjson::shown_object).collect();
    // An id with no steps is either unknown or has not recorded any: say which.
    if steps.is_empty() && store.load(id)?.is_none() {
        return Err(not_found(id).into());
    }
    if json {
        return write_json(out, &steps);
    }
    if steps.is_empty() {
        writeln!(out, "no trace steps recorded for {}", clean(id))?;
        return Ok(());
    }
    let mut table = Table::new(&[
        ("INDEX", 0),
        ("EVENT", 20),
        ("FROM → TO", 64),
        ("ACTIONS", 48),
        ("ASSIGNED", 36),
        ("AT (UTC)", 0),
    ]);
    for step in &steps {
        table.row(trace_row(step));
    }
    table.write(out)?;
    Ok(())
}

fn trace_row(step: &TraceStep) -> Vec<String> {
    let text = |key: &str| match step.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "∅".to_owned(),
        Some(other) => other.to_string(),
    };
    let list = |key: &str| match step.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let assigned = match step.get("assigned") {
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", fit(&v.to_string(), 16)))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    };
    let mut actions = list("actions");
    let guards = list("guards");
    if !guards.is_empty() {
        actions = format!("[{guards}] {actions}").trim_end().to_owned();
    }
    vec![
        step.get("index").map_or_else(|| "?".into(), Value::to_string),
        text("event_kind"),
        format!("{} → {}", text("from_path"), text("to_path")),
        actions,
        assigned,
        step.get("timestamp")
            .and_then(Value::as_f64)
            .map_or_else(|| "-".into(), time::utc),
    ]
}

/// `execstore outbox`.
pub fn outbox(store: &dyn ExecutionStore, args: &SeqPageArgs, json: bool, out: &mut dyn Write) -> Result<()> {
    let entries = store.pending_outbox(args.after, args.limit)?;
    if json {
        return write_json(out, &entries);
    }
    if entries.is_empty() {
        writeln!(out, "no undelivered outbox events")?;
        return Ok(());
    }
    let mut table = Table::new(&[
        ("SEQ", 0),
        ("TARGET", 0),
        ("EVENT", 24),
        ("EVENT ID", 0),
        ("DATA", 60),
    ]);
    for e in &entries {
        table.row(vec![
            e.seq.to_string(),
            or_dash(e.target_id.as_deref()),
            e.event.kind.clone(),
            e.event.id.clone(),
            Value::Object(e.event.data.clone()).to_string(),
        ]);
    }
    table.write(out)?;
    more_hint(out, entries.len(), args.limit, entries.last().map(|e| e.seq))
}

/// `execstore spawns`.
pub fn spawns(store: &dyn ExecutionStore, args: &SeqPageArgs, json: bool, out: &mut dyn Write) -> Result<()> {
    let mut entries = store.pending_spawns(args.after, args.limit)?;
    for e in &mut entries {
        e.context = pyjson::shown_object(&e.context);
    }
    if json {
        return write_json(out, &entries);
    }
    if entries.is_empty() {
        writeln!(out, "no pending spawns")?;
        return Ok(());
    }
    let mut table = Table::new(&[
        ("SEQ", 0),
        ("PARENT", 0),
        ("CHILD", 0),
        ("ROOT PATH", 40),
        ("CONTEXT", 60),
    ]);
    for e in &entries {
        table.row(vec![
            e.seq.to_string(),
            e.parent_id.clone(),
            e.child_id.clone(),
            e.root_path.clone(),
            Value::Object(e.context.clone()).to_string(),
        ]);
    }
    table.write(out)?;
    more_hint(out, entries.len(), args.limit, entries.last().map(|e| e.seq))
}

fn more_hint(out: &mut dyn Write, shown: usize, limit: usize, last: Option<i64>) -> Result<()> {
    match last {
        Some(seq) if shown == limit => writeln!(out, "{shown} shown; more with --after {seq}")?,
        _ => writeln!(out, "{shown} shown")?,
    }
    Ok(())
}

/// `execstore timers`.
pub fn timers(store: &dyn ExecutionStore, args: &TimersArgs, json: bool, out: &mut dyn Write) -> Result<()> {
    let bound = args.due_before.unwrap_or(ALL_TIMERS);
    let due = store.due_timers(bound, None, args.limit)?;
    if json {
        return write_json(out, &due);
    }
    if due.is_empty() {
        match args.due_before {
            Some(t) => writeln!(out, "no timers fire at or before {} UTC", time::utc(t))?,
            None => writeln!(out, "no armed timers")?,
        }
        return Ok(());
    }
    let now = time::now();
    let mut table = Table::new(&[("EXECUTION", 0), ("PATH", 48), ("FIRE AT (UTC)", 0), ("WHEN", 0)]);
    for t in &due {
        table.row(vec![
            t.execution_id.clone(),
            t.path.clone(),
            time::utc(t.fire_at),
            time::until(t.fire_at, now),
        ]);
    }
    table.write(out)?;
    if due.len() == args.limit {
        writeln!(out, "{} shown; raise --limit for more", due.len())?;
    } else {
        writeln!(out, "{} shown", due.len())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use execstore::{
        executions::{Event, Status},
        Effects, Execution, MemoryStore,
    };

    fn store() -> MemoryStore {
        let store = MemoryStore::new();
        for i in 0..5 {
            let mut exe = Execution::new(format!("e{i}"), if i % 2 == 0 { "orders" } else { "payments" });
            exe.status = if i < 3 { Status::Running } else { Status::Done };
            exe.active_path = Some("order.cart".into());
            let mut step = TraceStep::new();
            step.insert("event_kind".into(), "Start".into());
            step.insert("from_path".into(), Value::Null);
            step.insert("to_path".into(), "order.cart".into());
            step.insert("actions".into(), serde_json::json!(["orders.open_cart"]));
            step.insert("timestamp".into(), 1_700_000_000.0.into());
            let fx = Effects::new()
                .emit(None, Event::new(format!("ev{i}"), "Ping"))
                .schedule("order.cart", 1_700_000_000.0 + f64::from(i))
                .trace(step);
            store.commit(&mut exe, &fx).unwrap();
        }
        store
    }

    fn run(f: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<String> {
        let mut out = Vec::new();
        f(&mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    fn list_args(limit: usize, all: bool) -> ListArgs {
        ListArgs {
            status: vec![],
            definition: None,
            roots_only: false,
            limit,
            cursor: None,
            all,
            created_after: None,
            created_before: None,
            updated_after: None,
            updated_before: None,
            finished_after: None,
            finished_before: None,
            search: None,
            order: execstore::executions::ListOrder::Id,
            filter: None,
        }
    }

    #[test]
    fn list_pages_and_all() {
        let s = store();
        let text = run(|o| list(&s, &list_args(2, false), false, false, o)).unwrap();
        assert!(text.starts_with("ID  DEFINITION  STATUS"), "{text}");
        assert!(text.contains("2 shown; next page: --cursor "), "{text}");
        let json = run(|o| list(&s, &list_args(2, true), false, true, o)).unwrap();
        let page: ExecutionPage = serde_json::from_str(&json).unwrap();
        assert_eq!(page.items.len(), 5);
        assert_eq!(page.next_cursor, None);
        let mut args = list_args(10, false);
        args.status = vec![Status::Done];
        args.definition = Some("payments".into());
        let page: ExecutionPage =
            serde_json::from_str(&run(|o| list(&s, &args, false, true, o)).unwrap()).unwrap();
        assert_eq!(
            page.items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
            ["e3"]
        );
    }

    #[test]
    fn show_and_trace_of_unknown_id_are_not_found() {
        let s = store();
        for result in [
            run(|o| show(&s, "nope", false, o)),
            run(|o| trace(&s, "nope", true, o)),
        ] {
            let err = result.unwrap_err();
            assert_eq!(err.to_string(), "execution nope not found");
        }
        let text = run(|o| show(&s, "e1", false, o)).unwrap();
        assert!(text.contains("status       RUNNING"), "{text}");
        let text = run(|o| trace(&s, "e1", false, o)).unwrap();
        assert!(text.contains("Start"), "{text}");
        assert!(text.contains("∅ → order.cart"), "{text}");
    }

    #[test]
    fn timers_without_a_bound_lists_every_timer() {
        let s = store();
        let mut exe = Execution::new("far", "orders");
        let fx = Effects::new()
            .schedule("order.in_2e12", 2e12)
            .schedule("order.in_1e300", 1e300);
        s.commit(&mut exe, &fx).unwrap();
        let args = TimersArgs {
            due_before: None,
            limit: 100,
        };
        let due: Vec<execstore::executions::DueTimer> =
            serde_json::from_str(&run(|o| timers(&s, &args, true, o)).unwrap()).unwrap();
        assert_eq!(due.len(), 7, "the store's five and the two far ones: {due:?}");
        assert_eq!(
            due[5..].iter().map(|t| t.fire_at).collect::<Vec<_>>(),
            [2e12, 1e300]
        );
        let text = run(|o| timers(&s, &args, false, o)).unwrap();
        assert!(
            text.contains("order.in_1e300") && text.ends_with("7 shown\n"),
            "{text}"
        );
    }

    #[test]
    fn timers_bound_and_outbox_paging() {
        let s = store();
        let args = TimersArgs {
            due_before: Some(1_700_000_001.0),
            limit: 100,
        };
        let due: Vec<execstore::executions::DueTimer> =
            serde_json::from_str(&run(|o| timers(&s, &args, true, o)).unwrap()).unwrap();
        assert_eq!(due.len(), 2);
        let page = SeqPageArgs {
            limit: 2,
            after: Some(1),
        };
        let text = run(|o| outbox(&s, &page, false, o)).unwrap();
        assert!(text.contains("2 shown; more with --after 3"), "{text}");
    }
}
