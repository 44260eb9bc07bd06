// incident-console: copy buttons for remediation commands, and each highlighted value scrolled into view
// inside its tool response. Nothing here builds HTML from data.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button.copy")) {
    button.addEventListener("click", async () => {
      const text = button.parentElement.querySelector("code").textContent;
      try {
        await navigator.clipboard.writeText(text);
        button.textContent = "Copied";
      } catch {
        const range = document.createRange();
        range.selectNodeContents(button.parentElement.querySelector("code"));
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        button.textContent = "Selected: press Ctrl+C";
      }
      setTimeout(() => { button.textContent = "Copy"; }, 2000);
    });
  }
  for (const pre of document.querySelectorAll("pre.response")) {
    const mark = pre.querySelector("mark");
    if (mark) pre.scrollTop = Math.max(0, mark.offsetTop - pre.offsetTop - 40);
  }
});
