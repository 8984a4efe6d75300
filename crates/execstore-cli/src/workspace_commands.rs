//! The workspace log's read commands, over any [`WorkspaceStorage`]. Tables by default; with
//! `--json` a JSON array whose elements are each record's JSON exactly as reflexr stores it.

use std::io::Write;

use execstore::workspace::search::SCAN_ROWS;
use execstore::workspace::{
    parse_log_where, parse_run_where, Envelope, LogQuery, LogSearch, Run, RunPolicy, RunQuery, RunSearch,
    WorkspaceStorage,
};
use serde_json::{json, Value};

use crate::error::Result;
use crate::table::Table;
use crate::workspace_args::{
    DeadLettersArgs, DueRunsArgs, LeasesArgs, LogArgs, RulesArgs, RunsArgs, WorkspaceArg,
};

/// Writes records whose JSON text is given, as one JSON array, each element verbatim.
fn write_records<I: IntoIterator<Item = String>>(out: &mut dyn Write, records: I) -> Result<()> {
    let mut first = true;
    write!(out, "[")?;
    for text in records {
        write!(out, "{}\n  {text}", if first { "" } else { "," })?;
        first = false;
    }
    writeln!(out, "{}]", if first { "" } else { "\n" })?;
    Ok(())
}

fn write_values(out: &mut dyn Write, values: Vec<Value>) -> Result<()> {
    write_records(out, values.iter().map(|v| v.to_string()))
}

fn text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "-".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// `execstore workspaces`.
pub fn workspaces(storage: &dyn WorkspaceStorage, json: bool, out: &mut dyn Write) -> Result<()> {
    let mut rows = Vec::new();
    for ws in storage.workspaces()? {
        let info = storage.workspace_info(&ws)?;
        let cursors = storage.cursors(&ws)?;
        rows.push((ws, info, cursors));
    }
    if json {
        return write_values(
            out,
            rows.into_iter()
                .map(|(ws, info, cursors)| {
                    json!({
                        "tenant_id": ws.tenant_id,
                        "workspace_id": ws.workspace_id,
                        "head_seq": info.as_ref().map_or(0, |i| i.head_seq),
                        "head_ts": info.and_then(|i| i.head_ts).map(|t| t.to_json_text()),
                        "cursors": cursors.into_iter().map(|(n, s)| json!({"name": n, "seq": s})).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        );
    }
    let mut table = Table::new(&[
        ("TENANT", 30),
        ("WORKSPACE", 30),
        ("HEAD", 0),
        ("LAST TS", 0),
        ("CURSORS", 60),
    ])
    .when_empty("no workspaces");
    for (ws, info, cursors) in rows {
        let head = info.as_ref().map_or(0, |i| i.head_seq);
        let lag: Vec<String> = cursors
            .iter()
            .map(|(n, s)| format!("{n}={s} (-{})", head - s))
            .collect();
        table.row(vec![
            ws.tenant_id,
            ws.workspace_id,
            head.to_string(),
            info.and_then(|i| i.head_ts)
                .map_or("-".into(), |t| t.to_json_text()),
            if lag.is_empty() { "-".into() } else { lag.join(" ") },
        ]);
    }
    table.write(out)?;
    Ok(())
}

fn envelope_rows(envelopes: &[Envelope], out: &mut dyn Write) -> Result<()> {
    let mut table = Table::new(&[
        ("SEQ", 0),
        ("TS", 0),
        ("ID", 36),
        ("TYPE", 40),
        ("ACTOR", 24),
        ("CORRELATION", 36),
        ("EVENT", 80),
    ])
    .when_empty("no events");
    for e in envelopes {
        let mut fields = e.event.clone();
        fields.shift_remove("type");
        table.row(vec![
            e.seq.to_string(),
            e.ts.to_json_text(),
            e.id.clone(),
            e.event_type().to_owned(),
            text(e.actor.get("name")),
            e.correlation_id.clone(),
            Value::Object(fields).to_string(),
        ]);
    }
    table.write(out)?;
    Ok(())
}

/// `execstore log`: the window reflexr's `read` gives, the whole of it unless limited.
pub fn log(storage: &dyn WorkspaceStorage, args: &LogArgs, json: bool, out: &mut dyn Write) -> Result<()> {
    if let Some(text) = &args.filter {
        return log_where(storage, args, text, json, out);
    }
    let query = LogQuery {
        after_seq: args.after,
        before_seq: args.before,
        types: (!args.types.is_empty()).then(|| args.types.clone()),
        limit: args.limit,
        last: args.last,
    };
    let envelopes = storage.read(&args.ws.reference(), &query)?;
    if json {
        return write_records(out, envelopes.iter().map(Envelope::to_json));
    }
    envelope_rows(&envelopes, out)
}

/// `log --where`: one page of the search, then where it got (on stderr with --json, so the
/// output stays the records).
fn log_where(
    storage: &dyn WorkspaceStorage,
    args: &LogArgs,
    text: &str,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let mut filter = parse_log_where(text, crate::time::now())?;
    if !args.types.is_empty() {
        let list: Vec<String> = args
            .types
            .iter()
            .map(|t| Value::from(t.as_str()).to_string())
            .collect();
        filter = filter.and(parse_log_where(&format!("type in ({})", list.join(", ")), 0.0)?);
    }
    let search = LogSearch {
        filter,
        after_seq: args.after,
        before_seq: args.before,
        newest_first: args.last.is_some(),
        limit: args.last.or(args.limit).unwrap_or(50),
        scan: args.scan.unwrap_or(SCAN_ROWS),
    };
    let page = storage.search_log(&args.ws.reference(), &search)?;
    let mut envelopes = page.envelopes;
    if search.newest_first {
        envelopes.reverse();
    }
    let note = match (page.scanned_to, page.next) {
        (None, _) => "scanned nothing: the window is empty".to_owned(),
        (Some(to), next) => {
            let more = match next {
                Some(n) if search.newest_first => format!("; go on with --before {n}"),
                Some(n) => format!("; go on with --after {n}"),
                None => "; the window is done".to_owned(),
            };
            format!(
                "scanned up to seq {to} ({} envelopes), {} matches{more}",
                page.scanned,
                envelopes.len()
            )
        }
    };
    if json {
        write_records(out, envelopes.iter().map(Envelope::to_json))?;
        eprintln!("{note}");
        return Ok(());
    }
    envelope_rows(&envelopes, out)?;
    writeln!(out, "{note}")?;
    Ok(())
}

/// `execstore runs`: newest first.
pub fn runs(storage: &dyn WorkspaceStorage, args: &RunsArgs, json: bool, out: &mut dyn Write) -> Result<()> {
    let query = RunQuery {
        rule: args.rule.clone(),
        status: args.status,
        scope_key: args.scope.clone(),
        limit: args.limit,
    };
    let (runs, note) = match &args.filter {
        Some(text) => {
            let mut filter = parse_run_where(text, crate::time::now())?;
            for (column, value) in query.filters() {
                let value = Value::from(value).to_string();
                filter = filter.and(parse_run_where(&format!("{column} = {value}"), 0.0)?);
            }
            let search = RunSearch {
                filter,
                cursor: args.cursor,
                limit: args.limit.unwrap_or(50),
                scan: args.scan.unwrap_or(SCAN_ROWS),
            };
            let page = storage.search_runs(&args.ws.reference(), &search)?;
            let more = match page.next {
                Some(n) => format!("; go on with --cursor {n}"),
                None => "; every run examined".to_owned(),
            };
            let note = format!("scanned {} runs, {} matches{more}", page.scanned, page.runs.len());
            (page.runs, Some(note))
        }
        None => (storage.runs(&args.ws.reference(), &query)?, None),
    };
    if json {
        write_records(out, runs.iter().map(|r| r.to_json()))?;
        if let Some(note) = note {
            eprintln!("{note}");
        }
        return Ok(());
    }
    run_table(&runs, out)?;
    if let Some(note) = note {
        writeln!(out, "{note}")?;
    }
    Ok(())
}

fn run_table(runs: &[Run], out: &mut dyn Write) -> Result<()> {
    let mut table = Table::new(&[
        ("ID", 36),
        ("RULE", 30),
        ("SCOPE", 30),
        ("STATUS", 0),
        ("FIRED", 0),
        ("ATTEMPTS", 0),
        ("NEXT ATTEMPT", 0),
        ("ERROR", 40),
    ])
    .when_empty("no runs");
    for r in runs {
        table.row(vec![
            r.id().to_owned(),
            r.rule().to_owned(),
            r.scope_key().to_owned(),
            r.status().to_string(),
            r.fired_seq().to_string(),
            text(r.doc().get("attempts")),
            r.next_attempt_at().to_json_text(),
            text(r.doc().get("error")),
        ]);
    }
    table.write(out)?;
    Ok(())
}

/// `execstore due-runs`: across every workspace.
pub fn due_runs(
    storage: &dyn WorkspaceStorage,
    args: &DueRunsArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let policy = RunPolicy {
        disabled: args.disabled.iter().cloned().collect(),
        ordered: args.ordered.iter().chain(&args.blocking).cloned().collect(),
        blocking: args.blocking.iter().cloned().collect(),
    };
    let due = storage.due_runs(args.now, args.limit, &policy)?;
    if json {
        return write_records(
            out,
            due.iter().map(|(ws, r)| {
                format!(
                    "{{\"tenant_id\": {}, \"workspace_id\": {}, \"run\": {}}}",
                    execstore::kit::pyjson::dumps(&ws.tenant_id),
                    execstore::kit::pyjson::dumps(&ws.workspace_id),
                    r.to_json()
                )
            }),
        );
    }
    let mut table = Table::new(&[
        ("TENANT", 24),
        ("WORKSPACE", 24),
        ("RUN", 36),
        ("RULE", 30),
        ("SCOPE", 30),
        ("STATUS", 0),
        ("NEXT ATTEMPT", 0),
    ])
    .when_empty("no due runs");
    for (ws, r) in &due {
        table.row(vec![
            ws.tenant_id.clone(),
            ws.workspace_id.clone(),
            r.id().to_owned(),
            r.rule().to_owned(),
            r.scope_key().to_owned(),
            r.status().to_string(),
            r.next_attempt_at().to_json_text(),
        ]);
    }
    table.write(out)?;
    Ok(())
}

/// How many rows one read of a paged listing takes.
const PAGE_ROWS: usize = 1000;

/// Reads a listing page by page (`read(after, n)` gives up to `n` rows after the position
/// `after`, `position` gives a row's), up to `limit` rows (`None`: all), and the position to
/// go on from when `limit` stopped it before the end.
fn read_pages<T, P: Clone>(
    mut after: P,
    limit: Option<u32>,
    mut read: impl FnMut(&P, usize) -> execstore::Result<Vec<T>>,
    position: impl Fn(&T) -> P,
) -> Result<(Vec<T>, Option<P>)> {
    let want = limit.map_or(usize::MAX, |n| n as usize);
    let mut rows = Vec::new();
    loop {
        // One more than wanted, so a limit that ends the listing exactly says no more.
        let n = PAGE_ROWS.min(want.saturating_sub(rows.len()).saturating_add(1));
        let page = read(&after, n)?;
        let ended = page.len() < n;
        if let Some(last) = page.last() {
            after = position(last);
        }
        rows.extend(page);
        if rows.len() > want {
            rows.truncate(want);
            let next = rows.last().map(&position);
            return Ok((rows, next));
        }
        if ended {
            return Ok((rows, None));
        }
    }
}

/// The line saying where a limited listing goes on (stderr with `--json`).
fn go_on(next: Option<String>, json: bool, out: &mut dyn Write) -> Result<()> {
    if let Some(next) = next {
        let note = format!("more: go on with --after {next}");
        if json {
            eprintln!("{note}");
        } else {
            writeln!(out, "{note}")?;
        }
    }
    Ok(())
}

/// `execstore dead-letters`: oldest first, read a page at a time from `--after`.
pub fn dead_letters(
    storage: &dyn WorkspaceStorage,
    args: &DeadLettersArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let reference = args.ws.reference();
    let rule = args.rule.as_deref();
    let (letters, next) = read_pages(
        args.after,
        args.limit,
        |after, n| storage.dead_letters_page(&reference, rule, *after, n),
        |(position, _)| *position,
    )?;
    if json {
        write_records(out, letters.iter().map(|(_, l)| l.to_json()))?;
    } else {
        let mut table = Table::new(&[("RULE", 30), ("SEQ", 0), ("ERROR", 80)]).when_empty("no dead letters");
        for (_, l) in &letters {
            table.row(vec![
                l.rule().to_owned(),
                text(l.doc().get("seq")),
                text(l.doc().get("error")),
            ]);
        }
        table.write(out)?;
    }
    go_on(next.map(|p| p.to_string()), json, out)
}

/// `execstore leases`: the lease rows by key, read a page at a time from `--after`;
/// `expired` against the machine's clock.
pub fn leases(
    storage: &dyn WorkspaceStorage,
    args: &LeasesArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let reference = args.ws.reference();
    let (leases, next) = read_pages(
        args.after.clone(),
        args.limit,
        |after, n| storage.leases_page(&reference, after.as_deref(), n),
        |l| Some(l.key.clone()),
    )?;
    if json {
        write_values(
            out,
            leases
                .iter()
                .map(|l| json!({"key": l.key, "holder": l.holder, "expires_at": l.expires_at.to_json_text()}))
                .collect(),
        )?;
    } else {
        let now = crate::time::now();
        let mut table =
            Table::new(&[("KEY", 50), ("HOLDER", 40), ("EXPIRES AT", 0), ("", 0)]).when_empty("no leases");
        for l in &leases {
            let lapsed = l.expires_at.secs_f64() <= now;
            table.row(vec![
                l.key.clone(),
                l.holder.clone(),
                l.expires_at.to_json_text(),
                if lapsed { "lapsed".into() } else { "held".into() },
            ]);
        }
        table.write(out)?;
    }
    go_on(next.flatten().map(|k: String| shell_word(&k)), json, out)
}

/// `key` as one shell word: as it is when it is plain, else in single quotes.
fn shell_word(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/@+=,".contains(c))
    {
        key.to_owned()
    } else {
        format!("'{}'", key.replace('\'', r"'\''"))
    }
}

/// `execstore cursors`: each consumer's seq and its lag behind the head.
pub fn cursors(
    storage: &dyn WorkspaceStorage,
    ws: &WorkspaceArg,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let reference = ws.reference();
    let cursors = storage.cursors(&reference)?;
    let head = storage.head_seq(&reference)?;
    if json {
        return write_values(
            out,
            cursors
                .iter()
                .map(|(n, s)| json!({"name": n, "seq": s, "lag": head - s}))
                .collect(),
        );
    }
    let mut table = Table::new(&[("NAME", 50), ("SEQ", 0), ("LAG", 0)]).when_empty("no cursors");
    for (n, s) in &cursors {
        table.row(vec![n.clone(), s.to_string(), (head - s).to_string()]);
    }
    table.write(out)?;
    Ok(())
}

/// `execstore progress`: each rule's progress, in the order the rules first saved one.
pub fn progress(
    storage: &dyn WorkspaceStorage,
    ws: &WorkspaceArg,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let progress = storage.progress(&ws.reference())?;
    if json {
        return write_records(
            out,
            progress.iter().map(|(rule, p)| {
                format!(
                    "{{\"rule\": {}, \"progress\": {}}}",
                    execstore::kit::pyjson::dumps(rule),
                    p.to_json()
                )
            }),
        );
    }
    let mut table = Table::new(&[("RULE", 40), ("CURSOR", 0), ("GENERATION", 0), ("DEADLINES", 0)])
        .when_empty("no rule progress");
    for (rule, p) in &progress {
        let deadlines = p
            .doc()
            .get("deadlines")
            .and_then(Value::as_object)
            .map_or(0, |d| d.len());
        table.row(vec![
            rule.clone(),
            text(p.doc().get("cursor")),
            text(p.doc().get("generation")),
            deadlines.to_string(),
        ]);
    }
    table.write(out)?;
    Ok(())
}

/// `execstore schedules`: each schedule's last tick (UTC).
pub fn schedules(
    storage: &dyn WorkspaceStorage,
    ws: &WorkspaceArg,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let schedules = storage.schedules(&ws.reference())?;
    if json {
        return write_values(
            out,
            schedules
                .iter()
                .map(|(n, at)| json!({"name": n, "at": at.to_json_text()}))
                .collect(),
        );
    }
    let mut table = Table::new(&[("NAME", 50), ("LAST TICK", 0)]).when_empty("no schedules");
    for (n, at) in &schedules {
        table.row(vec![n.clone(), at.to_json_text()]);
    }
    table.write(out)?;
    Ok(())
}

/// `execstore rules`: the active stored rules by name, or one rule's version history.
pub fn rules(
    storage: &dyn WorkspaceStorage,
    args: &RulesArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let reference = args.ws.reference();
    if let Some(name) = &args.history {
        let history = storage.rule_history(&reference, name)?;
        if json {
            return write_records(out, history.iter().map(Envelope::to_json));
        }
        let mut table = Table::new(&[("SEQ", 0), ("TS", 0), ("FACT", 24), ("VERSION", 0), ("BY", 40)])
            .when_empty("no versions of this rule");
        for e in &history {
            table.row(vec![
                e.seq.to_string(),
                e.ts.to_json_text(),
                e.event_type().trim_start_matches("reflexr:").to_owned(),
                text(e.event.get("version")),
                e.event.get("provenance").map_or("-".into(), |p| p.to_string()),
            ]);
        }
        table.write(out)?;
        return Ok(());
    }
    let rules = storage.stored_rules(&reference)?;
    if json {
        return write_records(
            out,
            rules.iter().map(|r| {
                format!(
                    "{{\"rule\": {}, \"version\": {}, \"status\": \"{}\", \"provenance\": {}}}",
                    execstore::kit::pyjson::dumps(&r.rule),
                    r.version,
                    r.status.as_str(),
                    execstore::kit::pyjson::dumps(&r.provenance)
                )
            }),
        );
    }
    let mut table = Table::new(&[
        ("NAME", 40),
        ("VERSION", 0),
        ("STATUS", 0),
        ("DESCRIPTION", 60),
        ("PROVENANCE", 60),
    ])
    .when_empty("no stored rules");
    for r in &rules {
        table.row(vec![
            r.name().to_owned(),
            r.version.to_string(),
            r.status.as_str().to_owned(),
            text(r.rule.get("description")),
            Value::Object(r.provenance.clone()).to_string(),
        ]);
    }
    table.write(out)?;
    Ok(())
}
