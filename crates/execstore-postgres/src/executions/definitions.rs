//! Definition documents in `{pfx}execstore_definitions`, execstore's own table beside
//! harel's, created by the first put (harel never reads it; a database without it has
//! none). A store that creates no table of execstore's (`create_schema` off, read-only)
//! keeps none: its put is the contract's "unsupported".

use execstore::executions::definitions::{prepare_definition, read_definition, same_definition, unsupported};
use execstore::executions::DefinitionDoc;
use execstore::Result;

use super::PgStore;

impl PgStore {
    fn definitions_table(&self) -> String {
        format!("{}execstore_definitions", self.sql.pfx)
    }

    pub(crate) fn put_definition_doc(&self, doc: &DefinitionDoc) -> Result<bool> {
        let text = prepare_definition(doc)?;
        if self.read_only || !self.own_tables {
            return Err(unsupported());
        }
        let table = self.definitions_table();
        let present = self.query("SELECT to_regclass($1::text) IS NOT NULL", &[&table])?;
        if !present.first().is_some_and(|r| r.get::<_, bool>(0)) {
            // Two first puts at once: one CREATE may lose the race on the catalog; the
            // table is there all the same, so that error is ignored and the insert decides.
            let _ = self.write(|tx, _| {
                tx.execute(
                    &format!(
                        "CREATE TABLE IF NOT EXISTS {table} (definition_id text NOT NULL, \
                         definition_fqn text NOT NULL, document text NOT NULL, \
                         first_seen double precision NOT NULL, PRIMARY KEY (definition_id, definition_fqn))"
                    ),
                    &[],
                )
            });
        }
        self.write(|tx, _| {
            let inserted = tx.execute(
                &format!(
                    "INSERT INTO {table} (definition_id, definition_fqn, document, first_seen) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING"
                ),
                &[&doc.definition_id, &doc.definition_fqn, &text, &doc.first_seen],
            )?;
            if inserted == 1 {
                return Ok(true);
            }
            let row = tx.query_one(
                &format!(
                    "SELECT document, first_seen FROM {table} WHERE definition_id = $1 AND definition_fqn = $2"
                ),
                &[&doc.definition_id, &doc.definition_fqn],
            )?;
            let stored = read_definition(&doc.definition_id, &doc.definition_fqn, row.get(0), row.get(1))?;
            same_definition(&stored.document, doc)
        })
    }

    pub(crate) fn get_definition_doc(&self, id: &str, fqn: &str) -> Result<Option<DefinitionDoc>> {
        let table = self.definitions_table();
        let present = self.query("SELECT to_regclass($1::text) IS NOT NULL", &[&table])?;
        if !present.first().is_some_and(|r| r.get::<_, bool>(0)) {
            return Ok(None);
        }
        let rows = self.query(
            &format!(
                "SELECT document, first_seen FROM {table} WHERE definition_id = $1 AND definition_fqn = $2"
            ),
            &[&id, &fqn],
        )?;
        match rows.first() {
            Some(row) => read_definition(id, fqn, row.get(0), row.get(1)).map(Some),
            None => Ok(None),
        }
    }
}
