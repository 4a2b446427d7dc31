// An agent service: instead of mtgrpo starting a program per episode (env.agent.command), this
// long-running process asks the trainer for episodes (env.agent.service: true), plays each with
// calc_agent.ts's loop against the chat endpoint under the episode's own key, and finishes it.
// MTGRPO_URL is the endpoint (http://HOST:PORT/v1, env.agent.listen), MTGRPO_SERVICE_KEY the
// service key (env.agent.service_key); SERVICE_WORKERS episodes are played at once (default 8).
// It runs until it is stopped.
import OpenAI from "openai";
import { solve } from "./calc_agent";

const base = process.env.MTGRPO_URL ?? "http://127.0.0.1:8400/v1";
const auth = { Authorization: `Bearer ${process.env.MTGRPO_SERVICE_KEY ?? ""}`, "Content-Type": "application/json" };

interface Episode {
  episode: number;
  task: { id: string };
  messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[];
  tools: OpenAI.Chat.Completions.ChatCompletionTool[];
  base_url: string;
  api_key: string;
  time_left_s: number;
}

// next waits (long polling) for the next episode; null when none came within wait_s.
async function next(): Promise<Episode | null> {
  const res = await fetch(`${base}/mtgrpo/episodes/next`, { method: "POST", headers: auth, body: JSON.stringify({ wait_s: 20 }) });
  if (res.status === 204) return null;
  if (!res.ok) throw new Error(`episodes/next: ${res.status} ${await res.text()}`);
  return (await res.json()) as Episode;
}

// play runs the agent on one episode and finishes it: {} (the trainer scores the conversation,
// env.agent.reward: task), or {"error": why}.
async function play(ep: Episode) {
  const client = new OpenAI({ baseURL: ep.base_url, apiKey: ep.api_key, maxRetries: 0, timeout: ep.time_left_s * 1000 });
  let body = {};
  try {
    await solve(client, ep);
  } catch (e) {
    body = { error: String(e) };
  }
  const headers = { Authorization: `Bearer ${ep.api_key}`, "Content-Type": "application/json" };
  const res = await fetch(`${ep.base_url}/mtgrpo/finish`, { method: "POST", headers, body: JSON.stringify(body) });
  if (!res.ok) console.error(`episode ${ep.episode}: finish: ${res.status} ${await res.text()}`);
}

async function worker() {
  for (;;) {
    let ep: Episode | null;
    try {
      ep = await next();
    } catch (e) {
      console.error(String(e)); // the trainer is not up yet, or restarting: ask again shortly
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    if (ep) await play(ep);
  }
}

const workers = Number(process.env.SERVICE_WORKERS ?? 8);
Promise.all(Array.from({ length: workers }, worker));
