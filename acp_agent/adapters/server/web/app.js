// The web page of `acp-agent server --web`: an ACP client over the server's WebSocket.
//
// Plain JavaScript, no dependency, no build step. It lists the server's sessions
// (session/list), attaches to one (_acp-agent/attach) as an observer or, with "control"
// ticked, a controller, and shows what the session's updates say: the conversation, tool
// calls with their diffs, background jobs (_acp-agent/job) and questions, which a
// controller answers here (the first answer from any client wins; an observer is shown
// them, _acp-agent/permission_asked). It advertises `subagents: {}`, so each branch
// arrives as a child session (announced by a `subagent_update` on the parent, then its
// own updates on its id): each child is a lane of its own, its steps, its words, its
// questions (asked on its id) and its report. The login cookie rides on the WebSocket's
// upgrade; the page holds no token.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  ws: null,
  nextId: 1,
  pending: new Map(), // our request id -> {resolve, reject}
  session: null,
  calls: new Map(), // toolCallId -> {el, title, status, ...}
  last: null, // the message being streamed: {key, el}
  questions: new Map(), // questionKey(sessionId, toolCallId) -> {el}
  requests: new Map(), // the server's request id -> questionKey
  jobs: new Map(), // jobId -> {el, ...}
  lanes: new Map(), // a child session's id -> its lane: {el, title, state, steps, ...}
};

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function status(text) {
  $("status").textContent = text;
}

function send(message) {
  state.ws.send(JSON.stringify({ jsonrpc: "2.0", ...message }));
}

function request(method, params) {
  const id = state.nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => state.pending.set(id, { resolve, reject }));
}

function notify(method, params) {
  send({ method, params });
}

function connect() {
  const ws = new WebSocket(`ws://${location.host}/acp`);
  state.ws = ws;
  ws.onopen = async () => {
    status("connected");
    await request("initialize", {
      protocolVersion: 1,
      clientCapabilities: { subagents: {} },
      clientInfo: { name: "acp-agent-web", title: "acp-agent web page", version: "1" },
    });
    await listSessions();
    const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
    if (wanted) await openSession(wanted);
  };
  ws.onmessage = (event) => receive(JSON.parse(event.data));
  ws.onclose = () => status("disconnected: reload the page to connect again");
}

function receive(message) {
  if (message.method === undefined) {
    const waiting = state.pending.get(message.id);
    if (waiting) {
      state.pending.delete(message.id);
      if (message.error) waiting.reject(message.error);
      else waiting.resolve(message.result);
    }
    return;
  }
  const params = message.params || {};
  switch (message.method) {
    case "session/update":
      return onUpdate(params);
    case "session/request_permission":
      return onQuestion(message.id, params);
    case "$/cancel_request":
      return onWithdrawn(params.requestId);
    case "_acp-agent/job":
      return onJob(params);
    case "_acp-agent/permission_asked":
      return onQuestion(null, params);
    case "_acp-agent/permission_resolved":
      return onResolved(params);
  }
  if (message.id !== undefined) {
    send({ id: message.id, error: { code: -32601, message: "Method not found" } });
  }
}

// --- the sessions ------------------------------------------------------------------------

async function listSessions() {
  const nav = $("sessions");
  nav.textContent = "";
  let cursor = null;
  do {
    const page = await request("session/list", cursor ? { cursor } : {});
    for (const info of page.sessions) nav.append(sessionItem(info));
    cursor = page.nextCursor;
  } while (cursor);
}

function sessionItem(info) {
  const item = element("div", "session");
  item.dataset.id = info.sessionId;
  item.append(element("div", "title", info.title || "(untitled)"));
  const when = (info.updatedAt || "").slice(0, 16).replace("T", " ");
  item.append(element("div", "meta", `${when} · ${info.cwd}`));
  item.onclick = () => openSession(info.sessionId);
  return item;
}

async function openSession(sessionId) {
  if (state.session) await request("_acp-agent/detach", { sessionId: state.session });
  state.session = sessionId;
  state.calls.clear();
  state.questions.clear();
  state.requests.clear();
  state.jobs.clear();
  state.lanes.clear();
  state.last = null;
  for (const id of ["conversation", "lanes", "jobs", "questions"]) $(id).textContent = "";
  $("title").textContent = sessionId;
  $("session").hidden = false;
  location.hash = `session=${sessionId}`;
  for (const item of document.querySelectorAll("nav .session")) {
    item.classList.toggle("open", item.dataset.id === sessionId);
  }
  const role = $("control").checked ? "controller" : "observer";
  for (const el of $("compose").elements) el.disabled = role !== "controller";
  const answer = await request("_acp-agent/attach", { sessionId, role, replay: "start" });
  status(`${answer.role} (${answer.clientId})`);
  document.body.dataset.attached = sessionId;
}

// --- updates ---------------------------------------------------------------------------------

function onUpdate(params) {
  const update = params.update;
  if (params.sessionId !== state.session) {
    const lane = state.lanes.get(params.sessionId);
    if (lane) laneUpdate(lane, update);
    return;
  }
  switch (update.sessionUpdate) {
    case "subagent_update":
      return announced(update);
    case "session_message":
      return branchMessage(update);
    case "user_message_chunk":
    case "agent_message_chunk":
    case "agent_thought_chunk":
      return chunk(update);
    case "tool_call":
    case "tool_call_update":
      return toolCall(update);
    case "session_info_update":
      if (typeof update.title === "string") $("title").textContent = update.title;
      return;
  }
}

function chunk(update) {
  const kind = {
    user_message_chunk: "you",
    agent_message_chunk: "agent",
    agent_thought_chunk: "thought",
  }[update.sessionUpdate];
  const key = `${kind}:${update.messageId || ""}`;
  if (!state.last || state.last.key !== key) {
    const el = element("div", `msg ${kind}`);
    $("conversation").append(el);
    state.last = { key, el };
  }
  const content = update.content || {};
  if (content.type === "text") state.last.el.append(content.text);
}

function toolCall(update) {
  let call = state.calls.get(update.toolCallId);
  if (!call) {
    call = { id: update.toolCallId, title: "", status: "pending", content: [] };
    state.calls.set(update.toolCallId, call);
  }
  for (const key of ["title", "status", "kind", "rawInput"]) {
    if (update[key] !== undefined && update[key] !== null) call[key] = update[key];
  }
  if (update.content) call.content = update.content;
  if (!call.el) {
    call.el = element("div");
    $("conversation").append(call.el);
    state.last = null;
  }
  renderTool(call);
}

function renderTool(call) {
  const el = call.el;
  el.className = `tool ${call.status}`;
  el.textContent = "";
  el.append(element("span", "title", call.title), element("span", "status", call.status));
  const command = call.rawInput && call.rawInput.command;
  if (typeof command === "string") el.append(element("div", "text", `$ ${command}`));
  for (const item of call.content || []) el.append(contentItem(item));
}

function contentItem(item) {
  if (item.type === "diff") return diffView(item);
  if (item.type === "terminal") return element("div", "text", `(terminal ${item.terminalId})`);
  const block = item.content || {};
  return element("div", "text", block.type === "text" ? block.text : `(${block.type})`);
}

// --- branches: child sessions, a lane each ---------------------------------------------

// A child announced (its first subagent_update) or patched: omitted fields stay as they were.
function announced(update) {
  let lane = state.lanes.get(update.sessionId);
  if (!lane) {
    lane = { id: update.sessionId, title: "", task: "", state: null, steps: new Map(), questions: [] };
    lane.reply = { key: null, text: "" };
    lane.report = null;
    lane.el = element("div", "lane");
    lane.el.dataset.session = update.sessionId;
    $("lanes").append(lane.el);
    state.lanes.set(update.sessionId, lane);
  }
  if (typeof update.title === "string") lane.title = update.title;
  if (typeof update.description === "string") lane.task = update.description;
  if (update.state !== undefined) lane.state = update.state;
  renderLane(lane);
}

// One of the child's own updates (on its session id).
function laneUpdate(lane, update) {
  switch (update.sessionUpdate) {
    case "agent_message_chunk": {
      const content = update.content || {};
      if (content.type !== "text") return;
      const key = update.messageId || "";
      if (lane.reply.key !== key) lane.reply = { key, text: "" };
      lane.reply.text += content.text;
      break;
    }
    case "tool_call":
    case "tool_call_update": {
      const step = lane.steps.get(update.toolCallId) || { title: update.toolCallId, status: "pending" };
      if (update.title) step.title = update.title;
      if (update.status) step.status = update.status;
      lane.steps.set(update.toolCallId, step);
      break;
    }
    case "session_message":
      // The outgoing view of its report (a child sends one to the parent as a turn ends).
      if (update.senderSessionId === lane.id) lane.report = messageText(update);
      break;
    default:
      return;
  }
  renderLane(lane);
}

function renderLane(lane) {
  const el = lane.el;
  const said = laneState(lane.state);
  el.className = `lane ${said.kind}`;
  el.textContent = "";
  const head = element("h2", "", lane.title || lane.id);
  head.append(element("span", "status", said.text));
  el.append(head);
  if (lane.task) el.append(element("div", "task", lane.task));
  const steps = element("ol", "steps");
  for (const [id, step] of lane.steps) {
    const item = element("li", `step ${step.status}`, step.title);
    item.dataset.call = id;
    steps.append(item);
  }
  el.append(steps);
  for (const question of lane.questions) el.append(question); // kept as they are
  // Its words while it works; once it reported, the report (the same words, kept).
  if (lane.report !== null && said.kind === "idle") {
    el.append(element("div", "report", lane.report));
  } else if (lane.reply.text) {
    el.append(element("div", "reply", lane.reply.text));
  }
}

// A child's state (a StateUpdate, or none yet), as a class and as words.
function laneState(reported) {
  if (!reported) return { kind: "running", text: "starting" };
  if (reported.state === "requires_action") return { kind: "waiting", text: "waiting for an answer" };
  if (reported.state === "idle") {
    const stop = reported.stopReason;
    const text = !stop ? "idle" : stop === "end_turn" ? "done" : stop.replace(/_/g, " ");
    return { kind: "idle", text };
  }
  return { kind: "running", text: "working" };
}

// A message between the parent and a child, as the parent's transcript shows it.
function branchMessage(update) {
  const outgoing = update.senderSessionId === state.session;
  const other = state.lanes.get(outgoing ? update.recipientSessionId : update.senderSessionId);
  const name = other ? other.title || other.id : "a branch";
  const el = element("div", "msg branch", `${outgoing ? "to" : "from"} ${name}: ${messageText(update)}`);
  $("conversation").append(el);
  state.last = null;
}

function messageText(update) {
  return (update.content || [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("");
}

// --- diffs -----------------------------------------------------------------------------------

function diffView(diff) {
  const pre = element("pre", "diff");
  pre.append(element("span", "ctx", `${diff.oldText == null ? "new file" : "edit"} ${diff.path}`));
  const before = diff.oldText == null ? [] : lines(diff.oldText);
  const after = lines(diff.newText || "");
  for (const [kind, line] of lineDiff(before, after)) {
    const mark = { add: "+", del: "-", ctx: " " }[kind];
    pre.append(element("span", kind, `${mark} ${line}`));
  }
  return pre;
}

function lines(text) {
  const all = text.split("\n");
  if (all.length && all[all.length - 1] === "") all.pop(); // the last line's end
  return all;
}

// Lines kept, removed and added (a longest common subsequence; past a size, all of both).
function lineDiff(a, b) {
  if (a.length * b.length > 250000) {
    return [...a.map((line) => ["del", line]), ...b.map((line) => ["add", line])];
  }
  const rows = a.length + 1;
  const cols = b.length + 1;
  const common = new Int32Array(rows * cols);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i * cols + j] =
        a[i] === b[j]
          ? common[(i + 1) * cols + j + 1] + 1
          : Math.max(common[(i + 1) * cols + j], common[i * cols + j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push(["ctx", a[i++]]);
      j++;
    } else if (j < b.length && (i === a.length || common[i * cols + j + 1] >= common[(i + 1) * cols + j])) {
      out.push(["add", b[j++]]);
    } else {
      out.push(["del", a[i++]]);
    }
  }
  return out;
}

// --- jobs and questions ------------------------------------------------------------------

function onJob(params) {
  if (params.sessionId !== state.session) return;
  const job = state.jobs.get(params.jobId) || {};
  Object.assign(job, params);
  if (!job.el) {
    job.el = element("div", "job");
    $("jobs").append(job.el);
    state.jobs.set(params.jobId, job);
  }
  job.el.textContent = "";
  job.el.dataset.state = job.state;
  job.el.append(element("span", "title", `Job $ ${job.command || job.jobId}`));
  let said = job.state;
  if (job.exitCode !== undefined && job.exitCode !== null) said += `, code ${job.exitCode}`;
  if (job.signal) said += `, ${job.signal}`;
  job.el.append(element("span", "state", said));
  if (job.output) job.el.append(element("pre", "", job.output));
}

// A question is one of the session's or one of a branch's (on its child session): a
// controller is asked it (requestId), an observer is shown it (requestId null).
function questionKey(sessionId, toolCallId) {
  return `${sessionId} ${toolCallId}`;
}

function onQuestion(requestId, params) {
  const call = params.toolCall || {};
  const lane = state.lanes.get(params.sessionId);
  if (!lane && params.sessionId !== state.session) {
    if (requestId !== null) send({ id: requestId, error: { code: -32602, message: "Unknown session" } });
    return;
  }
  const el = element("div", "question");
  const known = (lane ? lane.steps.get(call.toolCallId) : state.calls.get(call.toolCallId)) || {};
  el.append(element("div", "title", `Permission: ${call.title || known.title || call.toolCallId}`));
  const raw = call.rawInput || known.rawInput;
  if (raw && typeof raw.command === "string") el.append(element("div", "text", `$ ${raw.command}`));
  for (const item of call.content || []) el.append(contentItem(item));
  const key = questionKey(params.sessionId, call.toolCallId);
  if (requestId === null) {
    el.append(element("div", "outcome", "waiting for a controller's answer"));
  } else {
    const buttons = element("div", "choices");
    for (const option of params.options || []) {
      const button = element("button", option.kind, option.name);
      button.type = "button";
      button.onclick = () => {
        send({ id: requestId, result: { outcome: { outcome: "selected", optionId: option.optionId } } });
        settle(key, `answered here: ${option.name}`);
      };
      buttons.append(button);
    }
    el.append(buttons);
    state.requests.set(requestId, key);
  }
  state.questions.set(key, { el });
  if (lane) {
    lane.questions.push(el);
    renderLane(lane);
  } else {
    $("questions").append(el);
  }
}

function settle(key, said) {
  const question = state.questions.get(key);
  if (!question || question.el.classList.contains("resolved")) return;
  question.el.classList.add("resolved");
  for (const button of question.el.querySelectorAll("button")) button.disabled = true;
  const waiting = question.el.querySelector(".outcome");
  if (waiting) waiting.remove();
  question.el.append(element("div", "outcome", said));
}

function onWithdrawn(requestId) {
  const key = state.requests.get(requestId);
  if (key !== undefined) settle(key, "answered elsewhere");
}

function onResolved(params) {
  const outcome = params.outcome || {};
  const key = questionKey(params.sessionId, params.toolCallId);
  settle(key, `answered ${outcome.optionId || outcome.outcome} by ${params.resolvedBy}`);
}

// --- steering ------------------------------------------------------------------------------

function wire() {
  $("compose").onsubmit = async (event) => {
    event.preventDefault();
    const text = $("message").value.trim();
    if (!text || !state.session) return;
    $("message").value = "";
    try {
      const answer = await request("session/prompt", {
        sessionId: state.session,
        prompt: [{ type: "text", text }],
      });
      status(`your turn ended: ${answer.stopReason}`);
    } catch (error) {
      status(`the message was not taken: ${error.message}`);
    }
  };
  $("cancel").onclick = () => {
    if (state.session) notify("session/cancel", { sessionId: state.session });
  };
  $("control").onchange = () => {
    if (state.session) openSession(state.session);
  };
}

wire();
connect();
