// The reason every write asks for: an inline confirmation with a required "Reason" field,
// sent as the write's `reason` (the server refuses a write without one and records it in the
// audit log with the outcome). Used by the control actions (actions.js), the queues' buttons
// (shell.js `writeButton`) and saved views.

import { h } from "./dom.js";

/** The most characters a reason may have (the server's limit). */
export const MAX_REASON = 500;

/**
 * A confirmation box: `question`, a required reason, "Yes, <label>" (enabled once a reason
 * is written) and "Cancel". `onYes(reason)` runs on Yes (or Enter in the field); `onNo` on
 * Cancel (or Escape).
 */
export function reasonConfirm({ label, question, onYes, onNo }) {
  const input = h("input", {
    type: "text",
    class: "reason-input",
    name: "reason",
    required: true,
    maxlength: String(MAX_REASON),
    placeholder: "Reason (required, for the audit log)",
    "aria-label": `Reason to ${label.toLowerCase()}`,
    autocomplete: "off",
  });
  const yes = h("button", { type: "button", class: "danger small", dataset: { confirm: "yes" }, disabled: true }, `Yes, ${label.toLowerCase()}`);
  const no = h("button", { type: "button", class: "ghost small", dataset: { confirm: "no" } }, "Cancel");
  const ready = () => input.value.trim().length > 0;
  input.addEventListener("input", () => {
    yes.disabled = !ready();
  });
  const go = async () => {
    if (!ready()) {
      input.focus();
      return;
    }
    yes.disabled = true;
    no.disabled = true;
    input.disabled = true;
    await onYes(input.value.trim());
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      go();
    } else if (e.key === "Escape") {
      e.preventDefault();
      onNo();
    }
  });
  yes.addEventListener("click", go);
  no.addEventListener("click", () => onNo());
  const box = h("span", { class: "confirm", role: "alertdialog", "aria-label": question }, h("span", { class: "question" }, question), " ", input, " ", yes, " ", no);
  box.focusReason = () => input.focus();
  return box;
}
