// delayq console, topics page: pause, resume and rate-limit business
// topics (topicctl through /ui/api/topics). Loaded after app.js, whose
// route() calls loadTopics; values go into the page with textContent.
"use strict";

async function loadTopics() {
  const body = $("topics-table").tBodies[0];
  let res;
  try {
    res = await api("topics");
  } catch (e) {
    body.replaceChildren(el("tr", {}, el("td", { colspan: 6 }, "topics: " + e.message)));
    return;
  }
  $("topics-all").textContent = res.all_paused ? "ALL TOPICS PAUSED" : "";
  body.replaceChildren();
  for (const t of res.topics) {
    const act = el("td", {});
    if (state.write) {
      const b = el("button", { type: "button", "data-topic": t.topic, class: t.state === "paused" ? "" : "danger" },
        t.paused ? "Resume" : "Pause");
      b.addEventListener("click", () => topicAction(t.paused ? "resume" : "pause", t.topic));
      act.append(b);
    }
    body.append(el("tr", { "data-topic": t.topic },
      el("td", {}, t.topic),
      el("td", { class: "state", "data-state": t.state }, el("span", { class: "badge " + t.state }, t.state)),
      el("td", { class: "rate" }, t.per_second ? fmtInt(t.per_second) : "–"),
      el("td", {}, t.expire_after || "–"),
      el("td", { class: "held" }, fmtInt(t.held)),
      act));
  }
  if (!res.topics.length) body.append(el("tr", {}, el("td", { colspan: 6 }, "no topic is paused, limited or holding tasks")));
  for (const id of ["topics-form"]) $(id).hidden = !state.write;
}

async function topicAction(op, topic, body) {
  const what = topic === "*" ? "every topic" : topic;
  if ((op === "pause") && !confirm("Pause " + what + "? Its due tasks are held until resume.")) return;
  try {
    await api("topics/" + op, Object.assign({ topic }, body || {}));
    $("topics-result").textContent = op + " " + what + ": done";
    $("topics-result").className = "ok";
  } catch (e) {
    $("topics-result").textContent = e.message;
    $("topics-result").className = "bad";
  }
  loadTopics();
}

document.addEventListener("DOMContentLoaded", () => {
  const topic = () => $("topics-topic").value.trim();
  $("topics-pause").addEventListener("click", () => topicAction("pause", topic()));
  $("topics-resume").addEventListener("click", () => topicAction("resume", topic()));
  $("topics-set-rate").addEventListener("click", () => topicAction("rate", topic(), { per_second: Number($("topics-rate").value || 0) }));
  $("topics-pause-all").addEventListener("click", () => topicAction("pause", "*"));
  $("topics-resume-all").addEventListener("click", () => topicAction("resume", "*"));
});
