// The part of OpenClaw's plugin API (`openclaw/plugin-sdk/plugin-entry`) this plugin uses, so that it builds with
// the TypeScript compiler alone (toolchain/), without installing OpenClaw. tsconfig.sdk.json checks this file and
// the plugin against the pinned OpenClaw's own types (tests/openclaw/test_openclaw_wheel.py).
export type OpenClawPluginApi = {
  pluginConfig?: Record<string, unknown>;
  logger: { info: (message: string) => void; warn: (message: string) => void };
  registrationMode: string;
  registerTool: (tool: never, opts?: { name?: string; names?: string[] }) => void;
  registerMemoryCapability: (capability: {
    promptBuilder?: (params: { availableTools: Set<string> }) => string[];
    deterministicRecallToolName?: string;
  }) => void;
  on: (hookName: never, handler: never, opts?: never) => void;
  registerCli: (registrar: never, opts?: never) => void;
};
