// Copy buttons: a button with data-copy copies the text of the element of
// that id (a secret shown once) to the clipboard, and says so beside it.
import { one } from "./dom.js";

/**
 * copied copies the text the button names, or, where the browser lets
 * no page write the clipboard, selects it for the viewer to copy.
 * @param {HTMLButtonElement} button
 */
async function copied(button) {
  const source = document.getElementById(button.dataset.copy || "");
  const said = one("[data-copied]", button.parentElement || document);
  if (!source) return;
  let words = "Copied.";
  try {
    await navigator.clipboard.writeText(source.textContent || "");
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
    words = "Selected: copy it with your keyboard or menu.";
  }
  if (said) said.textContent = words;
}

/** startCopy wires the page's copy buttons. */
export function startCopy() {
  document.addEventListener("click", (e) => {
    const button = /** @type {Element} */ (e.target).closest("button[data-copy]");
    if (button instanceof HTMLButtonElement) copied(button);
  });
}
