// The stats page: every workspace's figures (/api/stats, what `monkey stats --json --all` prints) as charts.
"use strict";
(() => {
  const since = document.getElementById("since");
  const status = document.getElementById("status");
  const figures = document.getElementById("figures");
  since.value = new URLSearchParams(location.search).get("since") || "";

  async function load() {
    try {
      await monkey.charts.show(figures, since.value ? { since: since.value } : {});
      status.textContent = "";
      document.body.dataset.ready = "1";
    } catch (err) {
      status.textContent = "cannot read the stats (" + err.message + ")";
    }
  }
  since.addEventListener("change", () => {
    history.replaceState(null, "", since.value ? "/stats?since=" + encodeURIComponent(since.value) : "/stats");
    load();
  });
  load();
})();
