// Drives an MCP server with the official MCP TypeScript SDK and prints what it saw as JSON.
//
//     node client.mjs SDK_DIR [--version V] [--toggle] stdio COMMAND [ARG...]
//     node client.mjs SDK_DIR [--version V] [--toggle] [--token T] http URL
//
// SDK_DIR is the installed `@modelcontextprotocol/sdk` package folder. --version makes the
// `initialize` request ask for that protocol version instead of the SDK's newest (the SDK has
// no option for it, so the request is rewritten on its way to the transport). --toggle also
// switches the tool `add` off and on with the server's `set_tool_enabled` tool, waiting for
// `notifications/tools/list_changed`. --token sends `Authorization: Bearer T` with every HTTP
// request (the SDK's `requestInit`). The report has the shape `tests/mcp_python/client.py`
// prints; the Rust test `mcp_node` checks it, this script asserts nothing itself.

import path from 'node:path';
import { pathToFileURL } from 'node:url';

const WAIT_MS = 10_000;

const CALLS = [
    ['add_ok', 'add', { a: 2, b: 3 }],
    ['add_bad_type', 'add', { a: 'two', b: 3 }],
    ['add_missing', 'add', { a: 2 }],
    ['divide_by_zero', 'divide', { dividend: 1, divisor: 0 }],
    ['divide_integers', 'divide_integers', { dividend: 7, divisor: 2 }],
    ['now', 'now', {}],
    ['unknown_tool', 'no_such_tool', {}],
];

const usage = () => {
    process.stderr.write('usage: node client.mjs SDK_DIR [--version V] [--toggle] [--token T] (stdio COMMAND [ARG...] | http URL)\n');
    process.exit(2);
};

const argv = process.argv.slice(2);
const sdkDir = argv.shift();
if (!sdkDir) usage();
let version;
let toggle = false;
let token;
while (argv.length && argv[0].startsWith('--')) {
    if (argv[0] === '--version' && argv.length >= 2) {
        version = argv[1];
        argv.splice(0, 2);
    } else if (argv[0] === '--token' && argv.length >= 2) {
        token = argv[1];
        argv.splice(0, 2);
    } else if (argv[0] === '--toggle') {
        toggle = true;
        argv.shift();
    } else {
        usage();
    }
}

const load = (file) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', file)).href);
const { Client } = await load('client/index.js');
const { StdioClientTransport } = await load('client/stdio.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ToolListChangedNotificationSchema, McpError } = await load('types.js');

let transport;
if (argv[0] === 'stdio' && argv.length >= 2) {
    transport = new StdioClientTransport({ command: argv[1], args: argv.slice(2), stderr: 'inherit' });
} else if (argv[0] === 'http' && argv.length === 2) {
    const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
    transport = new StreamableHTTPClientTransport(new URL(argv[1]), { requestInit });
} else {
    usage();
}

// Ask for `version`, and learn what the server answered.
let negotiated;
const send = transport.send.bind(transport);
transport.send = (message, options) => {
    if (version && message.method === 'initialize') {
        message = { ...message, params: { ...message.params, protocolVersion: version } };
    }
    return send(message, options);
};
const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (answered) => {
    negotiated = answered;
    setProtocolVersion?.(answered);
};

const client = new Client({ name: 'tool-core-node-test', version: '1.0.0' });
let listChanged = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    listChanged += 1;
});

const call = async (name, args) => {
    try {
        const result = await client.callTool({ name, arguments: args });
        const text = result.content.filter((block) => block.type === 'text').map((block) => block.text).join('\n');
        const outcome = { is_error: Boolean(result.isError), text };
        if (result.structuredContent !== undefined) outcome.structured = result.structuredContent;
        return outcome;
    } catch (error) {
        if (error instanceof McpError) return { error_code: error.code, message: error.message.replace(/^MCP error -?\d+: /, '') };
        return { client_error: String(error) };
    }
};

const toolNames = async () => (await client.listTools()).tools.map((tool) => tool.name);

const waitForListChanged = async (seen) => {
    const deadline = Date.now() + WAIT_MS;
    while (listChanged === seen) {
        if (Date.now() > deadline) throw new Error('no notifications/tools/list_changed arrived');
        await new Promise((resolve) => setTimeout(resolve, 20));
    }
};

await client.connect(transport);
const capabilities = client.getServerCapabilities();
const tools = (await client.listTools()).tools;
const report = {
    protocol_version: negotiated ?? null,
    server_name: client.getServerVersion()?.name ?? null,
    tools_list_changed: Boolean(capabilities?.tools?.listChanged),
    tools,
    calls: {},
};
for (const [label, name, args] of CALLS) {
    report.calls[label] = await call(name, args);
}
if (toggle) {
    const seen = listChanged;
    const off = await call('set_tool_enabled', { name: 'add', enabled: false });
    await waitForListChanged(seen);
    report.toggle = {
        switch_off: off,
        notified: 'ToolsListChanged',
        tools_while_off: await toolNames(),
        call_while_off: await call('add', { a: 1, b: 1 }),
        switch_on: await call('set_tool_enabled', { name: 'add', enabled: true }),
        tools_after: await toolNames(),
    };
}
await client.close();
process.stdout.write(JSON.stringify(report) + '\n');
