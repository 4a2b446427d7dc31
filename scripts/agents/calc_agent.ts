// A tool-calling agent written against the OpenAI chat completions API (the official `openai`
// package), as any agent is: mtgrpo trains it unchanged by pointing it at its endpoint through
// OPENAI_BASE_URL and OPENAI_API_KEY. It reads its task on stdin: {"task", "messages", "tools"}
// (the environment's opening messages and the calculator's spec), runs the calculator itself and
// loops until the model answers without a tool call. AGENT_STREAM=1 streams every call. solve is
// the loop, which calc_service.ts runs as an agent service.
import OpenAI from "openai";
import { readFileSync } from "node:fs";

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type Tool = OpenAI.Chat.Completions.ChatCompletionTool;

// calculator evaluates + - * / and parentheses over numbers, and nothing else.
function calculator(expression: string): string {
  if (!/^[\d\s+\-*/().]+$/.test(expression)) return "Error: only numbers and + - * / ( ) are allowed";
  try {
    return String(Function(`"use strict"; return (${expression});`)());
  } catch (e) {
    return `Error: ${(e as Error).message}`;
  }
}

// complete makes one call, streamed or not, and returns the assistant message.
async function complete(client: OpenAI, messages: Message[], tools: Tool[]) {
  const request = { model: "policy", messages, tools, max_tokens: 64 };
  if (process.env.AGENT_STREAM !== "1") {
    const completion = await client.chat.completions.create(request);
    return completion.choices[0].message;
  }
  const stream = client.chat.completions.stream({ ...request, stream: true });
  return (await stream.finalChatCompletion()).choices[0].message;
}

// solve plays one task: calls until the model answers without a tool call (4 at most), running
// the calculator for it, and returns the conversation.
export async function solve(client: OpenAI, input: { messages: Message[]; tools: Tool[] }): Promise<Message[]> {
  const messages: Message[] = [...input.messages];
  for (let turn = 0; turn < 4; turn++) {
    const reply = await complete(client, messages, input.tools);
    messages.push(reply);
    if (!reply.tool_calls?.length) break;
    for (const call of reply.tool_calls) {
      if (call.type !== "function") continue;
      const { expression } = JSON.parse(call.function.arguments);
      messages.push({ role: "tool", tool_call_id: call.id, content: calculator(String(expression)) });
    }
  }
  return messages;
}

async function main() {
  const input = JSON.parse(readFileSync(0, "utf8"));
  const client = new OpenAI(); // reads OPENAI_BASE_URL and OPENAI_API_KEY
  const messages = await solve(client, input);
  console.log(messages.at(-1)?.content ?? "");
}

if (require.main === module) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
