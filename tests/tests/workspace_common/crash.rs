//! What the workspace crash test checks after each kill (`tests/src/bin/workspace_writer.rs`
//! writes it): every transaction appended envelopes `e-<seq>`, saved `crash-rule`'s progress
//! with `cursor` = the new head and the run `r-<head>`, all or nothing.

use execstore::workspace::{LogQuery, RunQuery, WorkspaceRef, WorkspaceStorage};

/// The crash writer's workspace.
pub fn workspace() -> WorkspaceRef {
    WorkspaceRef::new("crash", "w")
}

/// What the checker found.
#[derive(Debug, Default)]
pub struct Report {
    /// The log's head.
    pub head: i64,
    /// Every violation, in words; empty when every transaction is whole.
    pub violations: Vec<String>,
}

/// Checks the crash writer's workspace through `storage`: a gap-free log `1..=head` of
/// `e-<seq>`, the head recorded equal to the last seq, the progress cursor at the head, and
/// the run of every committed transaction, the last one's at the head.
pub fn check(storage: &dyn WorkspaceStorage) -> Report {
    let w = workspace();
    let mut r = Report::default();
    let log = storage.read(&w, &LogQuery::new()).expect("read the log");
    let head = log.len() as i64;
    r.head = head;
    for (n, e) in log.iter().enumerate() {
        let want = n as i64 + 1;
        if e.seq != want || e.id != format!("e-{want}") {
            r.violations
                .push(format!("log position {want} holds seq {} id {}", e.seq, e.id));
        }
    }
    let recorded = storage.head_seq(&w).expect("head_seq");
    if recorded != head {
        r.violations
            .push(format!("head_seq {recorded} but the log ends at {head}"));
    }
    let progress = storage.progress(&w).expect("progress");
    match (head, progress.as_slice()) {
        (0, []) => {}
        (_, [(rule, p)]) if rule == "crash-rule" => {
            let cursor = p.doc().get("cursor").and_then(|c| c.as_i64());
            if cursor != Some(head) {
                r.violations
                    .push(format!("progress cursor {cursor:?} but the head is {head}"));
            }
        }
        (_, other) => r.violations.push(format!("head {head} with progress {other:?}")),
    }
    let runs = storage.runs(&w, &RunQuery::default()).expect("runs");
    for run in &runs {
        let h = run.fired_seq();
        if run.id() != format!("r-{h}") || h < 1 || h > head {
            r.violations
                .push(format!("run {} fired at {h} with the head at {head}", run.id()));
        }
    }
    if head > 0 && runs.first().map(|run| run.fired_seq()) != Some(head) {
        r.violations.push(format!(
            "the newest run is {:?}, not the head's r-{head}",
            runs.first().map(|run| run.id().to_owned())
        ));
    }
    r
}
