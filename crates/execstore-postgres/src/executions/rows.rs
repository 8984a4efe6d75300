//! Rows as records, and small helpers of the execution store's reads.

use execstore::{
    executions::{DueTimer, Event, JsonObject, OutboxEntry, SpawnEntry},
    Execution, Result, StoreError,
};
use postgres::Row;

pub(super) fn outbox_entry(row: &Row) -> Result<OutboxEntry> {
    let seq: i64 = col(row, 0)?;
    let event: String = col(row, 2)?;
    let event: Event = serde_json::from_str(&event).map_err(|e| corrupt(format!("outbox entry {seq}"), e))?;
    Ok(OutboxEntry {
        seq,
        target_id: col(row, 1)?,
        event,
    })
}

pub(super) fn spawn_entry(row: &Row) -> Result<SpawnEntry> {
    let seq: i64 = col(row, 0)?;
    let context: String = col(row, 4)?;
    // Python's json.dumps may have written NaN or Infinity: read them as null.
    let context: JsonObject = execstore::kit::pyjson::loads_object_exact(&context)
        .map_err(|e| corrupt(format!("spawn entry {seq} context"), e))?;
    Ok(SpawnEntry {
        seq,
        parent_id: col(row, 1)?,
        child_id: col(row, 2)?,
        root_path: col(row, 3)?,
        context,
    })
}

pub(super) fn due_timer(row: &Row) -> Result<DueTimer> {
    Ok(DueTimer {
        execution_id: col(row, 0)?,
        path: col(row, 1)?,
        fire_at: col(row, 2)?,
    })
}

pub(super) fn corrupt(what: String, err: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what,
        reason: err.to_string(),
    }
}

pub(super) fn parse_execution(id: &str, data: &str) -> Result<Execution> {
    serde_json::from_str(data).map_err(|e| corrupt(format!("execution {id}"), e))
}

/// A column of `row`, or `Corrupt` if it does not hold the expected type.
pub(super) fn col<'a, T: postgres::types::FromSql<'a>>(row: &'a Row, idx: usize) -> Result<T> {
    row.try_get(idx).map_err(|e| corrupt("row".into(), e))
}

/// The least string greater than every string that starts with `prefix` (in code-point order,
/// which is the `"C"` collation's byte order over UTF-8), or `None` if there is none.
pub(super) fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last {
            '\u{D7FF}' => Some('\u{E000}'),
            c => char::from_u32(u32::from(c) + 1),
        };
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

pub(super) fn limit_param(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::schema::{self, Sql, Tables};
    use super::super::sql::Stmts;
    use super::*;

    #[test]
    fn upper_bounds() {
        assert_eq!(prefix_upper_bound("ab").as_deref(), Some("ac"));
        assert_eq!(prefix_upper_bound("").as_deref(), None);
        assert_eq!(prefix_upper_bound("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(prefix_upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_upper_bound("\u{10FFFF}").as_deref(), None);
    }

    #[test]
    fn listing_walks_the_keys_indexes() {
        let s = Stmts::new(&Tables::new(Some("harel")).unwrap(), false, true);
        let sql = s.list(true, true, 1, true);
        assert!(sql.contains("JOIN harel_execstore_keys k ON "), "{sql}");
        assert!(sql.contains("(k.status, k.id) > ($3, $1)"), "{sql}");
        assert!(sql.contains("k.status <= $3") && sql.contains("k.root"), "{sql}");
        assert!(sql.contains("e.definition_id = $2"), "{sql}");
        assert!(sql.ends_with("ORDER BY k.status, k.id LIMIT $4::int8"), "{sql}");
        let several = s.list(false, false, 3, false);
        assert_eq!(several.matches(" UNION ALL ").count(), 2, "{several}");
        for p in ["$1", "$2", "$3"] {
            assert!(several.contains(&format!("k.status >= {p}")), "{several}");
        }
        assert!(
            several.ends_with("ORDER BY (id COLLATE \"C\") LIMIT $4::int8"),
            "{several}"
        );
        // No status and no roots: the executions alone, by their "C" id index.
        let plain = s.list(true, false, 0, false);
        assert!(!plain.contains("execstore_keys"), "{plain}");
        assert!(plain.contains("(e.id COLLATE \"C\") > $1"), "{plain}");
        // A database without the keys reads the same columns from the documents, spelled as
        // the indexes of migrations 1 and 2 are.
        let unkeyed = Stmts::new(&Tables::new(Some("harel")).unwrap(), false, false);
        let index = Tables::new(Some("harel"))
            .unwrap()
            .sql(schema::MIGRATIONS[0].statements[1]);
        let status = format!("({}->>'status')", schema::json_of("data"));
        assert!(index.contains(&format!("({status}, (id COLLATE")), "{index}");
        assert!(unkeyed
            .list(false, false, 1, true)
            .contains(&format!("{status} AS status")));
    }
}
