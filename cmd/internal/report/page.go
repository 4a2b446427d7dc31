package report

import (
	"html/template"
	"strconv"
)

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"num": func(v float64) string { return strconv.FormatFloat(v, 'g', 5, 64) },
	"add": func(a, b int) int { return a + b },
}).Parse(pageHTML))

// pageHTML is the report page: everything inline (styles, drawings, the script that filters
// trajectories), so the file can be mailed, shared or opened offline.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mtgrpo report: {{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1320px; padding: 16px 24px; color: #222; }
h1 { font-size: 1.5em; margin: 0.2em 0; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.meta { color: #666; font-size: 0.9em; }
nav a { margin-right: 1em; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 12px; }
.chart { border: 1px solid #e4e4e4; border-radius: 6px; padding: 4px; background: #fff; }
.chart svg { width: 100%; height: auto; display: block; }
details.view { margin: 8px 0 16px; } details.view > summary { cursor: pointer; font-weight: bold; font-size: 1.05em; margin-bottom: 6px; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { padding: 2px 10px; text-align: right; border-bottom: 1px solid #eee; }
td:first-child, th:first-child { text-align: left; font-family: monospace; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 0.85em; }
details.sample { border: 1px solid #e4e4e4; border-radius: 6px; margin: 6px 0; padding: 4px 8px; }
details.sample > summary { cursor: pointer; font-family: monospace; }
.turn { border-left: 3px solid #9ab; margin: 6px 0 6px 4px; padding-left: 8px; }
.msg { white-space: pre-wrap; font-family: monospace; font-size: 0.85em; margin: 2px 0 6px; }
.role { font-weight: bold; font-size: 0.8em; color: #456; }
.output { background: #eef6ee; } .tool { background: #f6f0e6; } .call { background: #eef0fa; }
.pos { color: #176d2c; } .zero { color: #999; }
.controls { margin: 8px 0; }
</style>
</head>
<body>
<h1>mtgrpo run: {{.Title}}</h1>
<div class="meta">{{.Dir}} · {{.Steps}} steps logged{{if .Steps}} ({{.FirstStep}} to {{.LastStep}}){{end}} · generated {{.Generated}}</div>
<nav><a href="#charts">charts</a><a href="#summary">all metrics</a><a href="#trajectories">trajectories</a><a href="#config">config</a></nav>

<h2 id="charts">Charts</h2>
{{range .Views}}<details class="view" id="view-{{.Phase}}"{{if .Open}} open{{end}}>
<summary>{{.Title}}: steps {{.From}} to {{.To}} · {{len .Charts}} charts</summary>
<div class="charts">{{range .Charts}}<div class="chart" id="chart-{{.ID}}" data-x="{{num .X.Min}} {{num .X.Max}}" data-y="{{num .Y.Min}} {{num .Y.Max}}" data-series="{{.Series}}">{{.SVG}}</div>{{end}}</div>
</details>
{{else}}<p>No metric of any chart has been logged yet.</p>{{end}}

<h2 id="summary">All metrics</h2>
{{if .Summary}}<table>
<tr><th>metric</th><th>first</th><th>last</th><th>min</th><th>max</th><th>steps</th></tr>
{{range .Summary}}<tr><td>{{.Name}}</td><td>{{num .First}}</td><td>{{num .Last}}</td><td>{{num .Min}}</td><td>{{num .Max}}</td><td>{{.N}}</td></tr>
{{end}}</table>{{else}}<p>No metrics yet.</p>{{end}}

<h2 id="trajectories">Trajectories</h2>
{{if .Samples}}
<div class="controls">
<label>step <select id="step-filter"><option value="all">all</option>{{range .SampleSteps}}<option value="{{.}}">{{.}}</option>{{end}}</select></label>
<label><input type="checkbox" id="rewarded-only"> rewarded only</label>
<span id="shown" class="meta"></span>
{{if .SamplesLeftOut}}<span class="meta">({{.SamplesLeftOut}} older trajectories not embedded: see samples/ in the run directory)</span>{{end}}
</div>
<div id="samples">
{{range $si, $s := .Samples}}<details class="sample"{{if eq $si 0}} open{{end}} data-step="{{.Step}}" data-reward="{{.Reward}}">
<summary>step {{.Step}} · episode {{.Index}} · group {{.Group}} · task {{.Task}} · <span class="{{if gt .Reward 0.0}}pos{{else}}zero{{end}}">reward {{num .Reward}}</span> · {{len .Turns}} turns · {{.End}}</summary>
{{if .Answer}}<div class="meta">answer: {{.Answer}}</div>{{end}}{{if .Error}}<div class="meta">error: {{.Error}}</div>{{end}}
{{range $i, $t := .Turns}}<div class="turn"><div class="meta">turn {{add $i 1}} ({{$t.Kind}}, {{$t.Finish}}) · turn reward {{num $t.Reward}}</div>
{{range $t.Context}}<div class="role">{{.Role}}</div><div class="msg">{{.Content}}</div>{{end}}
<div class="role">output</div><div class="msg output">{{$t.Output}}</div>
{{range $t.ToolCalls}}<div class="role">tool call</div><div class="msg call">{{.Function.Name}} {{printf "%s" .Function.Arguments}}</div>{{end}}
{{range $t.Feedback}}<div class="role">{{.Role}}</div><div class="msg tool">{{.Content}}</div>{{end}}
</div>{{end}}
</details>
{{end}}</div>
{{else}}<p>No trajectory samples in this run.</p>{{end}}

<h2 id="config">Config</h2>
{{if .Config}}<pre>{{.Config}}</pre>{{else}}<p>No config.yaml in this run.</p>{{end}}

<script>
(function () {
  var sel = document.getElementById("step-filter");
  var only = document.getElementById("rewarded-only");
  var shown = document.getElementById("shown");
  var items = document.querySelectorAll("details.sample");
  function apply() {
    var n = 0;
    for (var i = 0; i < items.length; i++) {
      var d = items[i];
      var ok = (!sel || sel.value === "all" || d.dataset.step === sel.value) &&
               (!only || !only.checked || parseFloat(d.dataset.reward) > 0);
      d.style.display = ok ? "" : "none";
      if (ok) n++;
    }
    if (shown) shown.textContent = n + " of " + items.length + " shown";
  }
  if (sel) sel.addEventListener("change", apply);
  if (only) only.addEventListener("change", apply);
  apply();
  document.body.dataset.ready = "1";
})();
</script>
</body>
</html>
`
