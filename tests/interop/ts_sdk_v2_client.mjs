// The TypeScript SDK 2.4.0's experimental v2 client driving acp-agent over stdio: the
// interop oracle of tests/interop/test_ts_sdk.py. Arguments: the SDK's package folder,
// the workspace, then the agent's command line. It prints one JSON summary line of what
// the SDK saw (or an error), and exits 0 when the SDK accepted every step.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, workspace, ...command] = process.argv.slice(2);
const acp = await import(pathToFileURL(join(sdkDir, "dist/v2/stable/acp.js")).href);

const agent = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const summary = {
  permissions: 0,
  kinds: [],
  stopReasons: [],
  replayed: [],
  texts: [],
  resuming: false,
};

const app = acp
  .client({ name: "ts-sdk-oracle" })
  .onRequest("session/request_permission", async ({ params }) => {
    summary.permissions += 1;
    const allow = params.options.find((option) => option.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onNotification("*", async ({ method, params }) => {
    if (summary.resuming && method === "session/update") {
      summary.replayed.push(params.update.sessionUpdate);
    }
  });

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      info: { name: "ts-sdk-oracle", version: "1.0.0" },
      capabilities: {},
    });
    summary.protocolVersion = init.protocolVersion;
    const session = await ctx.buildSession(workspace).start();
    summary.sessionId = session.sessionId;
    const answer = await session.prompt("Run the command.");
    summary.messageId = answer.messageId;
    for (;;) {
      const message = await session.nextUpdate();
      summary.kinds.push(message.update.sessionUpdate);
      if (message.update.sessionUpdate === "agent_message_chunk") {
        summary.texts.push(message.update.content.text);
      }
      if (message.kind === "stop") {
        summary.stopReasons.push(message.stopReason);
        break;
      }
    }
    session.dispose();
    summary.resuming = true;
    const resumed = await ctx.request("session/resume", {
      sessionId: summary.sessionId,
      cwd: workspace,
      replayFrom: { type: "start" },
    });
    summary.resumeResult = resumed;
    summary.resuming = false;
  });
  console.log(JSON.stringify({ ok: true, ...summary }));
  agent.stdin.end();
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: String(error?.stack ?? error), ...summary }));
  agent.kill();
  process.exitCode = 1;
}
