// The web page of `acp-agent server --web`: an ACP client over the server's WebSocket.
//
// Plain JavaScript, no dependency, no build step. It lists the server's sessions
// (session/list), attaches to one (_acp-agent/attach) as an observer or, with "control"
// ticked, a controller, and shows what the session's updates say: the conversation, each
// branch as a lane of its own (a branch is a tool call titled "Branch: ..."), tool calls
// with their diffs, background jobs (_acp-agent/job) and questions, which a controller
// answers here (the first answer from any client wins). The login cookie rides on the
// WebSocket's upgrade; the page holds no token.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  ws: null,
  nextId: 1,
  pending: new Map(), // our request id -> {resolve, reject}
  session: null,
  calls: new Map(), // toolCallId -> {el, title, status, ...}
  last: null, // the message being streamed: {key, el}
  questions: new Map(), // toolCallId -> {el, requestId}
  requests: new Map(), // the server's request id -> toolCallId
  jobs: new Map(), // jobId -> {el, ...}
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
  if (params.sessionId !== state.session) return;
  const update = params.update;
  switch (update.sessionUpdate) {
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
    call.lane = call.title.startsWith("Branch: ");
    call.el = element("div");
    (call.lane ? $("lanes") : $("conversation")).append(call.el);
    if (!call.lane) state.last = null;
  }
  (call.lane ? renderLane : renderTool)(call);
}

function renderLane(call) {
  const el = call.el;
  el.className = `lane ${call.status}`;
  el.textContent = "";
  const head = element("h2", "", call.title.slice("Branch: ".length));
  head.append(element("span", "status", call.status));
  el.append(head, element("div", "steps", texts(call.content).join("\n")));
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

function texts(content) {
  return (content || [])
    .filter((item) => item.type === "content" && item.content && item.content.type === "text")
    .map((item) => item.content.text);
}

function contentItem(item) {
  if (item.type === "diff") return diffView(item);
  if (item.type === "terminal") return element("div", "text", `(terminal ${item.terminalId})`);
  const block = item.content || {};
  return element("div", "text", block.type === "text" ? block.text : `(${block.type})`);
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

function onQuestion(requestId, params) {
  const call = params.toolCall || {};
  const el = element("div", "question");
  const known = state.calls.get(call.toolCallId) || {};
  el.append(element("div", "title", `Permission: ${call.title || known.title || call.toolCallId}`));
  const raw = call.rawInput || known.rawInput;
  if (raw && typeof raw.command === "string") el.append(element("div", "text", `$ ${raw.command}`));
  for (const item of call.content || []) el.append(contentItem(item));
  const buttons = element("div", "choices");
  for (const option of params.options || []) {
    const button = element("button", option.kind, option.name);
    button.type = "button";
    button.onclick = () => {
      send({ id: requestId, result: { outcome: { outcome: "selected", optionId: option.optionId } } });
      settle(call.toolCallId, `answered here: ${option.name}`);
    };
    buttons.append(button);
  }
  el.append(buttons);
  $("questions").append(el);
  state.questions.set(call.toolCallId, { el, requestId });
  state.requests.set(requestId, call.toolCallId);
}

function settle(toolCallId, said) {
  const question = state.questions.get(toolCallId);
  if (!question || question.el.classList.contains("resolved")) return;
  question.el.classList.add("resolved");
  for (const button of question.el.querySelectorAll("button")) button.disabled = true;
  question.el.append(element("div", "outcome", said));
}

function onWithdrawn(requestId) {
  const toolCallId = state.requests.get(requestId);
  if (toolCallId !== undefined) settle(toolCallId, "answered elsewhere");
}

function onResolved(params) {
  const outcome = params.outcome || {};
  settle(params.toolCallId, `answered ${outcome.optionId || outcome.outcome} by ${params.resolvedBy}`);
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
