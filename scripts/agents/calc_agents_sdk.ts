// The calc_mult agent on the OpenAI Agents SDK (@openai/agents): an Agent with a calculator
// function tool, run by the SDK's runner. Against mtgrpo's endpoint the SDK is set to chat
// completions (the endpoint does not serve the Responses API, the SDK's default) and tracing is
// off (it would export spans to OpenAI's servers); the client reads OPENAI_BASE_URL and
// OPENAI_API_KEY. It reads its task on stdin as calc_agent.ts does and prints the final answer.
import OpenAI from "openai";
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool } from "@openai/agents";
import { readFileSync } from "node:fs";
import { z } from "zod";

setTracingDisabled(true);
setOpenAIAPI("chat_completions");
setDefaultOpenAIClient(new OpenAI({ maxRetries: 0 }));

const calculator = tool({
  name: "calculator",
  description: "Evaluate an arithmetic expression exactly. Supports + - * / ^, parentheses and decimals.",
  parameters: z.object({ expression: z.string().describe("The expression, e.g. 123 * (45 + 6)") }),
  execute: async ({ expression }) => {
    if (!/^[\d\s+\-*/().]+$/.test(expression)) return "Error: only numbers and + - * / ( ) are allowed";
    return String(Function(`"use strict"; return (${expression});`)());
  },
});

async function main() {
  const input = JSON.parse(readFileSync(0, "utf8"));
  const system = input.messages.find((m: { role: string }) => m.role === "system")?.content ?? "";
  const user = input.messages.find((m: { role: string }) => m.role === "user")?.content ?? "";
  const agent = new Agent({ name: "calc", instructions: system, tools: [calculator], modelSettings: { maxTokens: 64 } });
  const result = await run(agent, user, { maxTurns: 4 });
  console.log(result.finalOutput ?? "");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
