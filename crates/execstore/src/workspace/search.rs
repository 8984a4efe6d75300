//! Finding envelopes and runs by their data: the `where` language (docs/search.md, "The
//! workspace log and runs") over a workspace's log ([`LOG_ROOTS`], [`envelope_matches`]) and
//! its runs ([`RUN_ROOTS`], [`run_matches`]), and the bounded, resumable searches of the
//! contract ([`LogSearch`], [`RunSearch`]).
//!
//! A search never reads a log or a run table whole: one page examines at most
//! [`LogSearch::scan`] rows (default [`SCAN_ROWS`]) and says how far it got and where to go
//! on. A backend may narrow the rows it hands over in SQL; the matchers here decide.

use serde_json::Value as Json;

use super::model::{Envelope, Run, RunStatus};
use crate::error::{Result, StoreError};
use crate::kit::filter::{self, eval, Cmp, Filter, Op, Path, RootKind, Term, Value};

const fn root(name: &'static str, json: bool, time: bool) -> RootKind {
    RootKind { name, json, time }
}

/// The paths of an envelope: `seq`, `id` (the event's id), `type` (the event's type), `at`
/// (its append time), `correlation_id`, `traceparent`, and the JSON documents `event.<keys>`,
/// `actor.<keys>` and `causation.<keys>`.
pub const LOG_ROOTS: &[RootKind] = &[
    root("seq", false, false),
    root("id", false, false),
    root("type", false, false),
    root("at", false, true),
    root("correlation_id", false, false),
    root("traceparent", false, false),
    root("event", true, false),
    root("actor", true, false),
    root("causation", true, false),
];

/// The paths of a run: `id`, `rule`, `scope_key`, `status`, `fired_seq`, `attempts`,
/// `depth`, `correlation_id`, `error`, `reason`, the times `due` (its next attempt),
/// `created` and `updated`, `scope.<keys>` (its scope's fields) and `event.<keys>` (the
/// event of the envelope at its `fired_seq`, the one that fired it).
pub const RUN_ROOTS: &[RootKind] = &[
    root("id", false, false),
    root("rule", false, false),
    root("scope_key", false, false),
    root("status", false, false),
    root("fired_seq", false, false),
    root("attempts", false, false),
    root("depth", false, false),
    root("correlation_id", false, false),
    root("error", false, false),
    root("reason", false, false),
    root("due", false, true),
    root("created", false, true),
    root("updated", false, true),
    root("scope", true, false),
    root("event", true, false),
];

/// How many rows one search page examines unless told otherwise.
pub const SCAN_ROWS: usize = 10_000;
/// The most rows one search page may be told to examine.
pub const MAX_SCAN: usize = 100_000;
/// The most matches one search page returns.
pub const MAX_MATCHES: usize = crate::kit::validate::MAX_PAGE;

/// Parses a `where` text over envelopes, checks its paths and resolves its times against
/// `now` (epoch seconds, the caller's clock). Bad input is [`StoreError::InvalidInput`] on
/// field `where`.
pub fn parse_log_where(text: &str, now: f64) -> Result<Filter> {
    let mut f = filter::parse(text)?;
    f.check_paths(LOG_ROOTS)?;
    f.resolve_times(LOG_ROOTS, now)?;
    check_log_filter(&f)?;
    Ok(f)
}

/// Parses a `where` text over runs (see [`parse_log_where`]); a `status` names one of
/// reflexr's run statuses, in any case.
pub fn parse_run_where(text: &str, now: f64) -> Result<Filter> {
    let mut f = filter::parse(text)?;
    f.check_paths(RUN_ROOTS)?;
    f.resolve_times(RUN_ROOTS, now)?;
    f.expr.terms_mut(&mut |t| {
        if t.path.root != "status" {
            return Ok(());
        }
        let fix = |v: &mut Value| -> Result<()> {
            if let Value::Str(s) = v {
                let lower = s.to_ascii_lowercase();
                RunStatus::parse(&lower).map_err(|_| {
                    let all: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
                    StoreError::invalid("where", format!("status {s:?} is none of {}", all.join(", ")))
                })?;
                *s = lower;
            }
            Ok(())
        };
        match &mut t.op {
            Op::Cmp(Cmp::Eq | Cmp::Ne, v) => fix(v),
            Op::In(vs) => vs.iter_mut().try_for_each(fix),
            _ => Ok(()),
        }
    })?;
    check_run_filter(&f)?;
    Ok(f)
}

/// Checks a filter over envelopes built without [`parse_log_where`].
pub fn check_log_filter(f: &Filter) -> Result<()> {
    check_filter(f, LOG_ROOTS)
}

/// Checks a filter over runs built without [`parse_run_where`].
pub fn check_run_filter(f: &Filter) -> Result<()> {
    check_filter(f, RUN_ROOTS)
}

fn check_filter(f: &Filter, roots: &[RootKind]) -> Result<()> {
    f.check_paths(roots)?;
    for t in f.expr.terms() {
        for key in &t.path.keys {
            if key
                .chars()
                .any(|c| matches!(c, '"' | '\\' | '\'') || c.is_control())
            {
                return Err(StoreError::invalid(
                    "where",
                    format!("the key {key:?} holds a quote, a backslash or a control character"),
                ));
            }
        }
        if roots.iter().any(|r| r.time && r.name == t.path.root) {
            let is_num = |v: &Value| matches!(v, Value::Num(n) if n.is_finite()) || *v == Value::Null;
            let ok = match &t.op {
                Op::Cmp(_, v) => is_num(v),
                Op::In(vs) => vs.iter().all(is_num),
                Op::Prefix(_) => false,
                Op::Exists | Op::Missing => true,
            };
            if !ok {
                return Err(StoreError::invalid(
                    "where",
                    format!("{}: expected a time in {t}", t.path),
                ));
            }
        }
    }
    Ok(())
}

/// Whether a filter over runs reads the firing event (an `event.` path).
pub fn reads_event(f: &Filter) -> bool {
    f.paths().iter().any(|p| p.root == "event")
}

fn time_of(text: Option<&Json>) -> Option<Json> {
    let t = super::time::Timestamp::parse_json_text(text?.as_str()?).ok()?;
    serde_json::Number::from_f64(t.secs_f64()).map(Json::Number)
}

fn below(doc: Option<&Json>, keys: &[String]) -> Option<Json> {
    doc.and_then(|d| eval::lookup(d, keys)).cloned()
}

/// The value of a path of an envelope (`None`: absent).
fn envelope_value(e: &Envelope, path: &Path) -> Option<Json> {
    match path.root.as_str() {
        "seq" => Some(Json::from(e.seq)),
        "id" => Some(Json::from(e.id.clone())),
        "type" => e.event.get("type").cloned(),
        "at" => serde_json::Number::from_f64(e.ts.secs_f64()).map(Json::Number),
        "correlation_id" => Some(Json::from(e.correlation_id.clone())),
        "traceparent" => e.traceparent.clone().map(Json::from),
        "event" => e
            .event
            .get(&path.keys[0])
            .and_then(|v| eval::lookup(v, &path.keys[1..]))
            .cloned(),
        "actor" => below(Some(&e.actor), &path.keys),
        "causation" => below(e.causation.as_ref(), &path.keys),
        _ => None,
    }
}

/// Whether `e` passes `filter` (over [`LOG_ROOTS`]): the reference every backend follows.
pub fn envelope_matches(filter: &Filter, e: &Envelope) -> bool {
    filter
        .expr
        .matches(&mut |t: &Term| eval::op_matches(&t.op, envelope_value(e, &t.path).as_ref()))
}

/// The value of a path of a run, `fired` the envelope at its `fired_seq` if any.
fn run_value(run: &Run, fired: Option<&Envelope>, path: &Path) -> Option<Json> {
    let doc = run.doc();
    let field = |name: &str| doc.get(name).cloned();
    match path.root.as_str() {
        "due" => time_of(doc.get("next_attempt_at")),
        "created" => time_of(doc.get("created_at")),
        "updated" => time_of(doc.get("updated_at")),
        "scope" => below(doc.get("scope"), &path.keys),
        "event" => fired.and_then(|e| envelope_value(e, path)),
        name => field(name),
    }
}

/// Whether `run` passes `filter` (over [`RUN_ROOTS`]), `fired` the envelope at the run's
/// `fired_seq` (`None` if it is not in the log: then every `event.` path is absent).
pub fn run_matches(filter: &Filter, run: &Run, fired: Option<&Envelope>) -> bool {
    filter
        .expr
        .matches(&mut |t: &Term| eval::op_matches(&t.op, run_value(run, fired, &t.path).as_ref()))
}

/// A search of a workspace's log: the envelopes matching `filter`, examining at most `scan`
/// envelopes from where the search stands.
#[derive(Clone, Debug, PartialEq)]
pub struct LogSearch {
    /// The condition, over [`LOG_ROOTS`].
    pub filter: Filter,
    /// Only envelopes after this seq (0: from the start).
    pub after_seq: i64,
    /// Only envelopes before this seq; `None`: up to the head.
    pub before_seq: Option<i64>,
    /// Newest first: the scan walks down from the top of the window.
    pub newest_first: bool,
    /// At most this many matches (1 to [`MAX_MATCHES`]).
    pub limit: usize,
    /// At most this many envelopes examined (1 to [`MAX_SCAN`]).
    pub scan: usize,
}

impl LogSearch {
    /// Oldest first from the start of the log, 50 matches, [`SCAN_ROWS`] examined.
    pub fn new(filter: Filter) -> Self {
        LogSearch {
            filter,
            after_seq: 0,
            before_seq: None,
            newest_first: false,
            limit: 50,
            scan: SCAN_ROWS,
        }
    }

    /// The checks every backend makes before reading.
    pub fn check(&self) -> Result<()> {
        check_log_filter(&self.filter)?;
        if self.after_seq < 0 {
            return Err(StoreError::invalid(
                "after_seq",
                format!("{} is negative", self.after_seq),
            ));
        }
        if let Some(b) = self.before_seq.filter(|b| *b < 0) {
            return Err(StoreError::invalid("before_seq", format!("{b} is negative")));
        }
        check_bounds(self.limit, self.scan)
    }
}

fn check_bounds(limit: usize, scan: usize) -> Result<()> {
    if limit == 0 || limit > MAX_MATCHES {
        return Err(StoreError::invalid(
            "limit",
            format!("{limit} is not in 1..={MAX_MATCHES}"),
        ));
    }
    if scan == 0 || scan > MAX_SCAN {
        return Err(StoreError::invalid(
            "scan",
            format!("{scan} is not in 1..={MAX_SCAN}"),
        ));
    }
    Ok(())
}

/// One page of a [`LogSearch`].
#[derive(Clone, Debug, PartialEq)]
pub struct LogPage {
    /// The matches, in the order scanned.
    pub envelopes: Vec<Envelope>,
    /// How many envelopes were examined.
    pub scanned: usize,
    /// The seq of the last envelope examined, `None` if none was.
    pub scanned_to: Option<i64>,
    /// Where to go on: the next page's `after_seq` (oldest first) or `before_seq` (newest
    /// first); `None` when the window is done.
    pub next: Option<i64>,
}

/// A search of a workspace's runs, newest first: the runs matching `filter`, examining at
/// most `scan` runs from `cursor` on.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSearch {
    /// The condition, over [`RUN_ROOTS`].
    pub filter: Filter,
    /// Where a previous page stopped ([`RunPage::next`]); `None`: from the newest run.
    pub cursor: Option<i64>,
    /// At most this many matches (1 to [`MAX_MATCHES`]).
    pub limit: usize,
    /// At most this many runs examined (1 to [`MAX_SCAN`]).
    pub scan: usize,
}

impl RunSearch {
    /// From the newest run, 50 matches, [`SCAN_ROWS`] examined.
    pub fn new(filter: Filter) -> Self {
        RunSearch {
            filter,
            cursor: None,
            limit: 50,
            scan: SCAN_ROWS,
        }
    }

    /// The checks every backend makes before reading.
    pub fn check(&self) -> Result<()> {
        check_run_filter(&self.filter)?;
        if let Some(c) = self.cursor.filter(|c| *c < 0) {
            return Err(StoreError::invalid("cursor", format!("{c} is negative")));
        }
        check_bounds(self.limit, self.scan)
    }
}

/// One page of a [`RunSearch`].
#[derive(Clone, Debug, PartialEq)]
pub struct RunPage {
    /// The matches, newest first.
    pub runs: Vec<Run>,
    /// How many runs were examined.
    pub scanned: usize,
    /// Where to go on ([`RunSearch::cursor`], an opaque position); `None` when every run has
    /// been examined.
    pub next: Option<i64>,
}

/// One run a driver's window holds: its position (runs older than it have smaller ones),
/// and, if it may match, the run and the envelope that fired it (when asked for).
#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    /// Its place among the workspace's runs (larger: newer).
    pub position: i64,
    /// The run and its firing envelope, or `None` when the backend ruled it out already.
    pub candidate: Option<(Run, Option<Envelope>)>,
}

/// A [`LogSearch`] over any source of candidates: `head` the log's head, `candidates(after,
/// upto, newest_first, n)` up to `n` envelopes with `after < seq <= upto` that may match (a
/// superset of the matches, in scan order). The log is gap-free, so a window of `scan` seqs
/// is `scan` rows.
pub fn search_log_with(
    search: &LogSearch,
    head: i64,
    candidates: &mut dyn FnMut(i64, i64, bool, usize) -> Result<Vec<Envelope>>,
) -> Result<LogPage> {
    let lo = search.after_seq;
    let hi = match search.before_seq {
        Some(b) => head.min(b - 1),
        None => head,
    };
    let mut page = LogPage {
        envelopes: Vec::new(),
        scanned: 0,
        scanned_to: None,
        next: None,
    };
    if hi <= lo {
        return Ok(page);
    }
    let span = i64::try_from(search.scan).unwrap_or(i64::MAX);
    let need = |page: &LogPage| search.limit - page.envelopes.len();
    if !search.newest_first {
        let end = hi.min(lo.saturating_add(span));
        let mut at = lo;
        loop {
            let n = need(&page);
            let found = candidates(at, end, false, n)?;
            let full = found.len() == n;
            for e in found {
                at = e.seq;
                if envelope_matches(&search.filter, &e) {
                    page.envelopes.push(e);
                    if page.envelopes.len() == search.limit {
                        break;
                    }
                }
            }
            if page.envelopes.len() == search.limit && at < end {
                break;
            }
            if !full || at >= end {
                at = end;
                break;
            }
        }
        page.scanned = usize::try_from(at - lo).unwrap_or(0);
        page.scanned_to = Some(at);
        page.next = (at < hi).then_some(at);
    } else {
        let start = lo.max(hi.saturating_sub(span));
        // The scan walks down from `hi` to `start + 1`; `at` is the lowest seq examined.
        let mut at = hi + 1;
        loop {
            let n = need(&page);
            let found = candidates(start, at - 1, true, n)?;
            let full = found.len() == n;
            for e in found {
                at = e.seq;
                if envelope_matches(&search.filter, &e) {
                    page.envelopes.push(e);
                    if page.envelopes.len() == search.limit {
                        break;
                    }
                }
            }
            if page.envelopes.len() == search.limit && at > start + 1 {
                break;
            }
            if !full || at <= start + 1 {
                at = start + 1;
                break;
            }
        }
        page.scanned = usize::try_from(hi - at + 1).unwrap_or(0);
        page.scanned_to = Some(at);
        page.next = (at > lo + 1).then_some(at);
    }
    Ok(page)
}

/// A [`RunSearch`] over a window of rows from a driver (newest first, at most `scan`): the
/// matches up to the limit, and where the next page starts.
pub fn search_runs_with(search: &RunSearch, rows: Vec<RunRow>) -> RunPage {
    let window_full = rows.len() >= search.scan;
    let mut page = RunPage {
        runs: Vec::new(),
        scanned: 0,
        next: None,
    };
    let mut last = None;
    for row in rows {
        page.scanned += 1;
        last = Some(row.position);
        if let Some((run, fired)) = row.candidate {
            if run_matches(&search.filter, &run, fired.as_ref()) {
                page.runs.push(run);
                if page.runs.len() == search.limit {
                    break;
                }
            }
        }
    }
    let stopped_early = page.runs.len() == search.limit && page.scanned < search.scan;
    if window_full || stopped_early {
        page.next = last;
    }
    page
}
