//! A snapshot in Prometheus' text exposition format (version 0.0.4): a `# HELP` and a
//! `# TYPE` line per family, then its samples, label values escaped as the format says
//! (`\\`, `\"`, `\n`).

use std::fmt::Write as _;

use super::snapshot::{Snapshot, WorkspaceFigures};

/// The `Content-Type` of the answer.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A label value with `\`, `"` and newlines escaped.
pub(crate) fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A HELP text with `\` and newlines escaped.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A value as the format writes floats (`+Inf`, `-Inf`, `NaN` spelt its way).
fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_owned()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{v}")
    }
}

/// One family being written.
struct Family<'a> {
    out: &'a mut String,
    name: &'static str,
}

impl Family<'_> {
    fn sample(&mut self, labels: &[(&str, &str)], v: f64) {
        let _ = write!(self.out, "{}", self.name);
        if !labels.is_empty() {
            let inner: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                .collect();
            let _ = write!(self.out, "{{{}}}", inner.join(","));
        }
        let _ = writeln!(self.out, " {}", value(v));
    }
}

fn family<'a>(out: &'a mut String, name: &'static str, kind: &str, help: &str) -> Family<'a> {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {kind}");
    Family { out, name }
}

/// One figure of a workspace.
type PerWorkspace = fn(&WorkspaceFigures) -> u64;

/// A workspace's labels, and one more.
fn labels<'w>(
    w: &'w WorkspaceFigures,
    extra: Option<(&'static str, &'w str)>,
) -> Vec<(&'static str, &'w str)> {
    let mut out = vec![("tenant", w.tenant.as_str()), ("workspace", w.workspace.as_str())];
    out.extend(extra);
    out
}

/// The snapshot as the text Prometheus scrapes. docs/metrics.md lists every family.
pub fn render(s: &Snapshot) -> String {
    let mut out = String::new();
    if let Some(e) = &s.executions {
        let mut f = family(
            &mut out,
            "execstore_executions",
            "gauge",
            "Executions in the store, by status.",
        );
        for (status, n) in &e.by_status {
            f.sample(&[("status", status)], *n as f64);
        }
        let mut f = family(
            &mut out,
            "execstore_definition_executions",
            "gauge",
            "Executions by definition and status (the definitions the monitor has seen).",
        );
        for (definition, counts) in &e.by_definition {
            for (status, n) in counts {
                f.sample(&[("definition", definition), ("status", status)], *n as f64);
            }
        }
        let mut f = family(
            &mut out,
            "execstore_definition_executions_age_seconds",
            "gauge",
            "How long ago execstore_definition_executions was counted (past 100,000 executions, every 10 minutes); absent when not counted.",
        );
        if let Some(counted) = e.by_definition_at {
            f.sample(&[], (s.at - counted).max(0.0));
        }
        let mut f = family(
            &mut out,
            "execstore_executions_started_last_minute",
            "gauge",
            "Executions whose created_at is in the last 60 seconds, by definition.",
        );
        for (definition, n) in &e.started_last_minute {
            f.sample(&[("definition", definition)], *n as f64);
        }
        let mut f = family(
            &mut out,
            "execstore_executions_finished_last_minute",
            "gauge",
            "Executions whose finished_at is in the last 60 seconds, by definition and status.",
        );
        for (definition, counts) in &e.finished_last_minute {
            for (status, n) in counts {
                f.sample(&[("definition", definition), ("status", status)], *n as f64);
            }
        }
        family(
            &mut out,
            "execstore_outbox_depth",
            "gauge",
            "Outbox entries not acknowledged yet.",
        )
        .sample(&[], e.outbox_depth as f64);
        let mut f = family(
            &mut out,
            "execstore_outbox_oldest_age_seconds",
            "gauge",
            "Age of the oldest outbox entry (its event's created_time); absent when the outbox is empty.",
        );
        if let Some(age) = e.outbox_oldest_age_seconds {
            f.sample(&[], age);
        }
        family(
            &mut out,
            "execstore_spawns_pending",
            "gauge",
            "Spawn intents not acknowledged yet.",
        )
        .sample(&[], e.spawns_pending as f64);
        family(
            &mut out,
            "execstore_timers_armed",
            "gauge",
            "Armed timers, due or not.",
        )
        .sample(&[], e.timers_armed as f64);
        family(
            &mut out,
            "execstore_timers_due",
            "gauge",
            "Armed timers whose fire_at has passed.",
        )
        .sample(&[], e.timers_due as f64);
        family(
            &mut out,
            "execstore_timer_lag_seconds",
            "gauge",
            "How late the oldest due timer is (now minus its fire_at); 0 when none is due.",
        )
        .sample(&[], e.timer_lag_seconds);
    }
    if let Some(list) = &s.workspaces {
        let mut f = family(
            &mut out,
            "execstore_workspace_log_envelopes_total",
            "counter",
            "Envelopes appended to the workspace's log: its head seq.",
        );
        for w in list {
            f.sample(&labels(w, None), w.head_seq as f64);
        }
        let mut f = family(
            &mut out,
            "execstore_workspace_cursor_lag",
            "gauge",
            "Envelopes a cursor is behind the log's head (head seq minus the cursor's seq).",
        );
        for w in list {
            for (cursor, lag) in &w.cursor_lag {
                f.sample(&labels(w, Some(("cursor", cursor))), *lag as f64);
            }
        }
        let mut f = family(&mut out, "execstore_workspace_runs", "gauge", "Runs by status.");
        for w in list {
            for (status, n) in &w.runs {
                f.sample(&labels(w, Some(("status", status))), *n as f64);
            }
        }
        let per_workspace: [(&'static str, &str, PerWorkspace); 4] = [
            (
                "execstore_workspace_due_runs",
                "Runs due now under the stored rules' policy.",
                |w| w.due_runs,
            ),
            ("execstore_workspace_dead_letters", "Dead letters kept.", |w| {
                w.dead_letters
            }),
            ("execstore_workspace_leases", "Leases held.", |w| w.leases),
            (
                "execstore_workspace_lapsed_leases",
                "Leases past their expiry that nobody released.",
                |w| w.lapsed_leases,
            ),
        ];
        for (name, help, get) in per_workspace {
            let mut f = family(&mut out, name, "gauge", help);
            for w in list {
                f.sample(&labels(w, None), get(w) as f64);
            }
        }
    }
    let mut f = family(
        &mut out,
        "execstore_metrics_truncated",
        "gauge",
        "1 for each read that stopped at its cap: its figures are lower bounds.",
    );
    for read in &s.truncated {
        f.sample(&[("read", read)], 1.0);
    }
    out
}
