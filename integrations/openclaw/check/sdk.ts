// Compiled only by tsconfig.sdk.json: OpenClaw's real plugin API fits the subset the plugin is built against.
import type { OpenClawPluginApi as Real } from "openclaw/plugin-sdk/plugin-entry";
import type { OpenClawPluginApi as Ours } from "../types/plugin-entry.js";

export const fits = (api: Real): Ours => api;
