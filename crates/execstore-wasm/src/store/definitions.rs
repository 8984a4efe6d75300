//! The definition documents of a store: `putDefinition` and `getDefinition`.

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use super::{JsResult, Store};
use crate::convert::{self, object, Unknown};
use crate::errors::WasmError;

#[wasm_bindgen]
impl Store {
    /// Keeps `document` (any JSON value: a machine's definition) for `(definitionId,
    /// definitionFqn)`, first seen at `firstSeen` (epoch seconds). Returns whether it was
    /// stored now (`false`: an equal document was there). A different document under the
    /// same key throws `ALREADY_EXISTS`, bad input `INVALID_INPUT`; neither changes anything.
    #[wasm_bindgen(js_name = putDefinition)]
    pub fn put_definition(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = definitionId)] definition_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = definitionFqn)] definition_fqn: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] document: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number", js_name = firstSeen)] first_seen: JsValue,
    ) -> JsResult<bool> {
        let doc = execstore::executions::DefinitionDoc {
            definition_id: convert::string(&definition_id, "definition_id")?,
            definition_fqn: convert::string(&definition_fqn, "definition_fqn")?,
            document: object(&document, "document", Unknown::Keep)?,
            first_seen: convert::number(&first_seen, "first_seen")?,
        };
        Ok(self.inner()?.put_definition(&doc).map_err(WasmError::from)?)
    }

    /// The definition document kept for `(definitionId, definitionFqn)`, or `null`.
    #[wasm_bindgen(js_name = getDefinition, unchecked_return_type = "DefinitionDoc | null")]
    pub fn get_definition(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = definitionId)] definition_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = definitionFqn)] definition_fqn: JsValue,
    ) -> JsResult<JsValue> {
        let id = convert::string(&definition_id, "definition_id")?;
        let fqn = convert::string(&definition_fqn, "definition_fqn")?;
        let doc = self.inner()?.get_definition(&id, &fqn).map_err(WasmError::from)?;
        Ok(convert::to_js(&doc)?)
    }
}
