// The TypeScript SDK 2.4.0's v1 client over the app server's WebSocket, with the SDK's
// own WebSocket stream (`experimental/ws-client`) and the `ws` package as its socket:
// the oracle of tests/interop/test_ts_sdk.py for issue 35. Arguments: the SDK's
// node_modules folder, the ws:// URL, the token, the workspace. It prints one JSON
// summary line of what the SDK saw (or an error), and exits 0 when every step passed.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [modules, url, token, workspace] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(modules, path)).href);
const acp = await load("@agentclientprotocol/sdk/dist/v1/stable/acp.js");
const { createWebSocketStream } = await load(
  "@agentclientprotocol/sdk/dist/transports/ws-stream.js",
);
const { WebSocket } = await load("ws/wrapper.mjs");

const summary = { texts: [], kinds: [] };
const app = acp
  .client({ name: "ts-sdk-ws-oracle" })
  .onNotification("session/update", async ({ params }) => {
    summary.kinds.push(params.update.sessionUpdate);
    if (params.update.sessionUpdate === "agent_message_chunk") {
      summary.texts.push(params.update.content.text);
    }
  });
const stream = createWebSocketStream(url, {
  WebSocket,
  headers: { Authorization: `Bearer ${token}` },
});
try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: {},
      clientInfo: { name: "ts-sdk-ws-oracle", version: "1.0.0" },
    });
    summary.protocolVersion = init.protocolVersion;
    const session = await ctx.request("session/new", { cwd: workspace, mcpServers: [] });
    summary.sessionId = session.sessionId;
    const answer = await ctx.request("session/prompt", {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "Hello over the web" }],
    });
    summary.stopReason = answer.stopReason;
  });
  console.log(JSON.stringify({ ok: true, ...summary }));
  process.exit(0);
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: String(error?.stack ?? error), ...summary }));
  process.exit(1);
}
