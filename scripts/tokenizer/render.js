// Reference chat-template renderer: @huggingface/jinja, which renders like transformers'
// apply_chat_template(tokenize=False).
//
//   node render.js CASES.json OUT.json
//
// CASES.json is a list of {"template": path, "config": tokenizer_config.json path,
// "messages": [...], "tools": [...]?, "add_generation_prompt": bool, "vars": {...}?}.
// As transformers does, the special tokens of tokenizer_config.json are template variables.
// OUT.json receives the list of rendered strings (or {"error": message}).
"use strict";
const path = require("path");
const fs = require("fs");
const npm = process.env.MTGRPO_NPM || path.join(__dirname, "../../third_party/npm/node_modules");
const { Template } = require(path.join(npm, "@huggingface/jinja"));

function tokenString(v) {
  if (v === null || v === undefined) return undefined;
  return typeof v === "string" ? v : v.content;
}

function render(c) {
  const src = fs.readFileSync(c.template, "utf8");
  const cfg = JSON.parse(fs.readFileSync(c.config, "utf8"));
  const vars = { messages: c.messages, add_generation_prompt: !!c.add_generation_prompt };
  if (c.tools) vars.tools = c.tools;
  for (const k of ["bos_token", "eos_token", "pad_token", "unk_token"]) {
    const s = tokenString(cfg[k]);
    if (s) vars[k] = s;
  }
  if (cfg.additional_special_tokens) vars.additional_special_tokens = cfg.additional_special_tokens.map(tokenString);
  Object.assign(vars, c.vars || {});
  try {
    return new Template(src).render(vars);
  } catch (e) {
    return { error: String(e.message || e) };
  }
}

const [casesPath, outPath] = process.argv.slice(2);
const cases = JSON.parse(fs.readFileSync(casesPath, "utf8"));
fs.writeFileSync(outPath, JSON.stringify(cases.map(render)));
