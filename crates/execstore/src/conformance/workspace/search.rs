//! Searching the log and the runs with the `where` language: every backend's pages, walked
//! by their cursors, equal the reference matcher's answer over everything, each page
//! examining at most its bound.

use super::*;
use crate::workspace::search::{envelope_matches, run_matches, LOG_ROOTS, RUN_ROOTS};
use crate::workspace::{parse_log_where, parse_run_where, Clock, LogSearch, RunSearch};

/// The clock's `now` for relative times in the checks' filters.
fn now_secs() -> f64 {
    t0().secs_f64() + 3600.0
}

/// A log of 90 envelopes whose events vary in the fields the filters read.
fn varied_log(s: &dyn WorkspaceStorage, w: &WorkspaceRef, clock: &ManualClock) -> Vec<Envelope> {
    let services = ["auth", "billing", "search"];
    let mut out = Vec::new();
    for chunk in 0..3 {
        let mut tx = s.begin(w).expect("begin");
        let entries: Vec<Entry> = (0..30)
            .map(|j| {
                let i = chunk * 30 + j;
                let mut event = json!({
                    "type": if i % 4 == 0 { "shop:paid" } else { "shop:seen" },
                    "service": services[i % 3],
                    "amount": (i % 17) as f64 * 1.5,
                    "meta": {"region": if i % 2 == 0 { "eu" } else { "us" }, "tier": i % 5},
                });
                if i % 7 == 0 {
                    event["note"] = Value::Null;
                }
                if i % 5 == 0 {
                    event["x"] = json!(i % 10 == 0);
                }
                if i % 6 == 0 {
                    // A text that looks like a number never equals the number.
                    event["amount"] = json!(format!("{}", (i % 17) as f64 * 1.5));
                }
                let mut e = Entry::new(
                    format!("ev-{i:03}"),
                    json!({"kind": "source", "name": if i % 2 == 0 { "web" } else { "batch" }}),
                    obj(event),
                );
                if i % 3 == 1 {
                    e.causation = Some(json!({"rule": "r1", "run_id": format!("run-{i}")}));
                }
                e
            })
            .collect();
        out.extend(tx.append(&entries).expect("append"));
        tx.commit().expect("commit");
        clock.advance_micros(600 * 1_000_000);
    }
    out
}

const LOG_FILTERS: &[&str] = &[
    "event.service = auth",
    "event.amount > 10",
    "event.amount >= 3 and event.amount < 12 or event.service = search",
    "event.x exists",
    "event.x = true",
    "event.note not exists",
    "event.note = null",
    "event.amount = \"4.5\"",
    "event.amount != 4.5",
    "type = shop:paid and event.meta.region = eu",
    "event.type ^= shop:p",
    "event.meta.tier in (1, 3)",
    "causation.rule = r1",
    "causation.run_id exists or actor.name = web",
    "seq > 40 and seq <= 60",
    "id ^= ev-05",
    "at >= 2026-01-01T12:10:00Z",
    "at < -50m",
    "correlation_id = ev-007",
    "event.nothing exists",
];

/// Every page of `search` from its start, following `next`, checking each page's bounds.
fn walk_log(s: &dyn WorkspaceStorage, w: &WorkspaceRef, mut search: LogSearch, head: i64) -> Vec<i64> {
    let mut found = Vec::new();
    for _ in 0..1000 {
        let page = s.search_log(w, &search).expect("search_log");
        assert!(
            page.envelopes.len() <= search.limit,
            "{}: a page holds at most its limit",
            search.filter
        );
        assert!(
            page.scanned <= search.scan,
            "{}: a page examines at most its scan",
            search.filter
        );
        if page.envelopes.len() < search.limit && page.next.is_some() {
            assert_eq!(
                page.scanned, search.scan,
                "{}: a short page that goes on scanned its whole bound",
                search.filter
            );
        }
        for e in &page.envelopes {
            assert!(
                envelope_matches(&search.filter, e),
                "{}: seq {} does not match",
                search.filter,
                e.seq
            );
        }
        if let (Some(to), Some(last)) = (page.scanned_to, page.envelopes.last()) {
            assert!(
                if search.newest_first {
                    last.seq >= to
                } else {
                    last.seq <= to
                },
                "{}: a match beyond scanned_to",
                search.filter
            );
        }
        found.extend(seqs(&page.envelopes));
        match page.next {
            Some(n) if search.newest_first => {
                assert!(
                    search.before_seq.is_none_or(|b| n < b) && n >= 1,
                    "the cursor moves down"
                );
                search.before_seq = Some(n);
            }
            Some(n) => {
                assert!(n > search.after_seq && n < head, "the cursor moves up");
                search.after_seq = n;
            }
            None => return found,
        }
    }
    panic!("{}: the search did not end", search.filter);
}

/// Searches of the log answer what the reference matcher picks from the whole log, in
/// either direction, whatever the page and scan sizes, by following the cursors.
pub fn log_search_matches_the_reference(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("search-log", "w");
    let all = varied_log(s, &w, h.clock());
    let head = all.len() as i64;
    for text in LOG_FILTERS {
        let filter = parse_log_where(text, now_secs()).expect(text);
        let expected: Vec<i64> = all
            .iter()
            .filter(|e| envelope_matches(&filter, e))
            .map(|e| e.seq)
            .collect();
        for (limit, scan) in [(50, 10_000), (4, 10_000), (3, 7), (1000, 25), (1, 1)] {
            for newest_first in [false, true] {
                let search = LogSearch {
                    limit,
                    scan,
                    newest_first,
                    ..LogSearch::new(filter.clone())
                };
                let mut got = walk_log(s, &w, search, head);
                if newest_first {
                    got.reverse();
                }
                assert_eq!(
                    got, expected,
                    "{text} (limit {limit}, scan {scan}, newest first {newest_first})"
                );
            }
        }
    }
    // One page: how far it got. 90 envelopes, a scan of 25: seqs 1..=25 examined.
    let f = parse_log_where("event.service = auth", now_secs()).expect("parses");
    let page = s
        .search_log(
            &w,
            &LogSearch {
                scan: 25,
                ..LogSearch::new(f.clone())
            },
        )
        .expect("search_log");
    assert_eq!(
        (page.scanned, page.scanned_to, page.next),
        (25, Some(25), Some(25))
    );
    assert_eq!(seqs(&page.envelopes), vec![1, 4, 7, 10, 13, 16, 19, 22, 25]);
    // Newest first from the head: 90 down to 66.
    let page = s
        .search_log(
            &w,
            &LogSearch {
                scan: 25,
                newest_first: true,
                ..LogSearch::new(f.clone())
            },
        )
        .expect("search_log");
    assert_eq!(
        (page.scanned, page.scanned_to, page.next),
        (25, Some(66), Some(66))
    );
    assert_eq!(seqs(&page.envelopes), vec![88, 85, 82, 79, 76, 73, 70, 67]);
    // A window: after 10, before 20.
    let page = s
        .search_log(
            &w,
            &LogSearch {
                after_seq: 10,
                before_seq: Some(20),
                ..LogSearch::new(f.clone())
            },
        )
        .expect("search_log");
    assert_eq!(
        (seqs(&page.envelopes), page.scanned, page.next),
        (vec![13, 16, 19], 9, None)
    );
    // The limit stops the scan at its last match.
    let page = s
        .search_log(
            &w,
            &LogSearch {
                limit: 2,
                ..LogSearch::new(f.clone())
            },
        )
        .expect("search_log");
    assert_eq!(
        (seqs(&page.envelopes), page.scanned_to, page.next),
        (vec![1, 4], Some(4), Some(4))
    );
    // Another workspace, and an empty one, find nothing.
    append(s, &ws("search-log", "other"), &["o-1"]);
    let any = parse_log_where("seq > 0", now_secs()).expect("parses");
    let page = s
        .search_log(&ws("search-log", "other"), &LogSearch::new(any.clone()))
        .expect("search");
    assert_eq!(page.envelopes.len(), 1);
    let page = s
        .search_log(&ws("search-log", "none"), &LogSearch::new(any))
        .expect("search");
    assert_eq!((page.envelopes.len(), page.scanned, page.next), (0, 0, None));
}

/// Runs whose rules, scopes, statuses, times and firing events vary.
fn varied_runs(
    s: &dyn WorkspaceStorage,
    w: &WorkspaceRef,
    log: &[Envelope],
    clock: &ManualClock,
) -> Vec<Run> {
    let statuses = [
        RunStatus::Pending,
        RunStatus::Dead,
        RunStatus::Succeeded,
        RunStatus::Retrying,
    ];
    let mut runs = Vec::new();
    for i in 0..60usize {
        let fired = &log[(i * 7) % log.len()];
        let mut r = Run::pending(NewRun {
            id: format!("run-{i:03}"),
            rule: if i % 3 == 0 {
                "alerts".into()
            } else {
                "billing".into()
            },
            scope_key: format!("k{}", i % 5),
            scope: obj(json!({"customer": format!("c-{}", i % 4), "level": i % 3, "vip": i % 8 == 0})),
            // Some runs were fired by a seq not in the log (then event. paths are absent).
            fired_seq: if i % 11 == 10 { 10_000 } else { fired.seq },
            matched: vec![fired.seq],
            correlation_id: format!("c-{i}"),
            depth: (i % 2) as i64,
            now: clock.now(),
        })
        .expect("valid run");
        r = with_status(&r, statuses[i % 4], at(60 * i as i64));
        runs.push(r);
        clock.advance_micros(1_000_000);
    }
    commit(s, w, |tx| tx.save_runs(&runs[..40]).expect("save"));
    commit(s, w, |tx| tx.save_runs(&runs[40..]).expect("save"));
    // An update keeps the run's place.
    let moved = runs[5]
        .with(obj(json!({"status": "dead", "attempts": 3, "error": "boom"})))
        .expect("valid");
    commit(s, w, |tx| {
        tx.save_runs(std::slice::from_ref(&moved)).expect("save")
    });
    runs[5] = moved;
    runs
}

const RUN_FILTERS: &[&str] = &[
    "status = dead",
    "status in (pending, RETRYING)",
    "rule = alerts and scope.customer = c-1",
    "rule exists",
    "scope.vip = true or scope.level >= 2",
    "scope.missing not exists and scope_key = k3",
    "event.service = auth",
    "event.amount > 10 and status != succeeded",
    "event.service exists",
    "event.meta.region = us or error = boom",
    "fired_seq <= 30",
    "due < 2026-01-01T12:20:00Z",
    "attempts = 3",
    "id ^= run-04",
    "correlation_id = c-7",
];

/// Searches of the runs answer what the reference matcher picks from every run (newest
/// first, with the envelope at each run's `fired_seq`), whatever the page and scan sizes.
pub fn run_search_matches_the_reference(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("search-runs", "w");
    let log = varied_log(s, &w, h.clock());
    varied_runs(s, &w, &log, h.clock());
    let newest_first = s.runs(&w, &RunQuery::default()).expect("runs");
    assert_eq!(newest_first.len(), 60);
    let fired = |r: &Run| log.iter().find(|e| e.seq == r.fired_seq()).cloned();
    for text in RUN_FILTERS {
        let filter = parse_run_where(text, now_secs()).expect(text);
        let expected: Vec<&str> = newest_first
            .iter()
            .filter(|r| run_matches(&filter, r, fired(r).as_ref()))
            .map(Run::id)
            .collect();
        assert!(
            !expected.is_empty() || text.contains("c-7"),
            "{text}: the data gives it matches"
        );
        for (limit, scan) in [(50, 10_000), (3, 10_000), (2, 7), (1000, 13), (1, 1)] {
            let mut search = RunSearch {
                limit,
                scan,
                ..RunSearch::new(filter.clone())
            };
            let mut got: Vec<String> = Vec::new();
            let mut pages = 0;
            loop {
                let page = s.search_runs(&w, &search).expect("search_runs");
                assert!(
                    page.runs.len() <= limit && page.scanned <= scan,
                    "{text}: a page's bounds"
                );
                got.extend(page.runs.iter().map(|r| r.id().to_owned()));
                pages += 1;
                assert!(pages < 500, "{text}: the search did not end");
                match page.next {
                    Some(n) => search.cursor = Some(n),
                    None => break,
                }
            }
            assert_eq!(got, expected, "{text} (limit {limit}, scan {scan})");
        }
    }
    // A scan of 10 of 60 runs examines 10 and goes on.
    let f = parse_run_where("status = dead", now_secs()).expect("parses");
    let page = s
        .search_runs(
            &w,
            &RunSearch {
                scan: 10,
                ..RunSearch::new(f)
            },
        )
        .expect("search");
    assert_eq!(page.scanned, 10);
    assert!(page.next.is_some());
    assert_eq!(ids(&page.runs), vec!["run-057", "run-053"]);
}

/// A bad filter or search is InvalidInput naming what is wrong, and changes nothing.
pub fn bad_searches_are_refused(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("search-bad", "w");
    append(s, &w, &["a", "b"]);
    let before = s.read(&w, &LogQuery::new()).expect("read");
    let reason = |r: crate::Result<crate::kit::filter::Filter>| match r {
        Err(StoreError::InvalidInput { field, reason }) => {
            assert_eq!(field, "where");
            reason
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    };
    assert!(reason(parse_log_where("event.service = ", 0.0)).contains("at character 17"));
    assert!(reason(parse_log_where("event.service auth", 0.0)).contains("at character 15"));
    assert!(reason(parse_log_where("status = running", 0.0)).contains("unknown path status"));
    assert!(reason(parse_log_where("event = 1", 0.0)).contains("needs a key"));
    assert!(reason(parse_log_where("seq.x = 1", 0.0)).contains("no keys"));
    assert!(reason(parse_log_where("at > yesterday", 0.0)).contains("not a time"));
    assert!(reason(parse_run_where("status = sleeping", 0.0)).contains("none of"));
    assert!(reason(parse_run_where("context.x = 1", 0.0)).contains("unknown path context.x"));
    assert!(reason(parse_run_where("scope.\"a'b\" = 1", 0.0)).contains("quote"));
    let ok = parse_log_where("seq > 0", 0.0).expect("parses");
    invalid(
        s.search_log(
            &w,
            &LogSearch {
                limit: 0,
                ..LogSearch::new(ok.clone())
            },
        ),
        "limit 0",
    );
    invalid(
        s.search_log(
            &w,
            &LogSearch {
                scan: 0,
                ..LogSearch::new(ok.clone())
            },
        ),
        "scan 0",
    );
    invalid(
        s.search_log(
            &w,
            &LogSearch {
                scan: crate::workspace::search::MAX_SCAN + 1,
                ..LogSearch::new(ok.clone())
            },
        ),
        "scan too large",
    );
    invalid(
        s.search_log(
            &w,
            &LogSearch {
                after_seq: -1,
                ..LogSearch::new(ok.clone())
            },
        ),
        "after -1",
    );
    invalid(
        s.search_log(&ws("", "w"), &LogSearch::new(ok.clone())),
        "empty tenant",
    );
    // A filter built by hand is checked too: a run path on the log, a bad key.
    let run_filter = parse_run_where("rule = r", 0.0).expect("parses");
    invalid(
        s.search_log(&w, &LogSearch::new(run_filter)),
        "a run path on the log",
    );
    invalid(
        s.search_runs(&w, &RunSearch::new(ok.clone())),
        "a log path on runs",
    );
    let run_ok = parse_run_where("rule exists", 0.0).expect("parses");
    invalid(
        s.search_runs(
            &w,
            &RunSearch {
                cursor: Some(-1),
                ..RunSearch::new(run_ok.clone())
            },
        ),
        "cursor -1",
    );
    invalid(
        s.search_runs(
            &w,
            &RunSearch {
                limit: 0,
                ..RunSearch::new(run_ok)
            },
        ),
        "limit 0",
    );
    assert_eq!(
        s.read(&w, &LogQuery::new()).expect("read"),
        before,
        "nothing changed"
    );
    // Every root is named in the error of an unknown one.
    let why = reason(parse_log_where("nope = 1", 0.0));
    for r in LOG_ROOTS {
        assert!(why.contains(r.name), "{why} names {}", r.name);
    }
    let why = reason(parse_run_where("nope = 1", 0.0));
    for r in RUN_ROOTS {
        assert!(why.contains(r.name), "{why} names {}", r.name);
    }
}
