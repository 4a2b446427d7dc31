package serve

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/env/agent"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// startService runs a node agent service against the rig's endpoint until the test ends (or
// stop is called).
func (g *agentRig) startService(t *testing.T, args ...string) (stop func()) {
	t.Helper()
	c := exec.Command("node", args...)
	c.Env = append(os.Environ(), "NODE_PATH="+nodeModules, "MTGRPO_URL="+g.url, "MTGRPO_SERVICE_KEY=sk-service", "SERVICE_WORKERS=4")
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			c.Process.Kill()
			c.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}

// An agent service (scripts/agents/calc_service.ts: calc_agent.ts's loop on the official openai
// client, four episodes at a time) takes the episodes of a batch, plays them against the endpoint
// with each episode's own key and finishes them: every episode is solved and trained token-exact,
// as with a program per episode. Taking episodes needs the service key.
func TestAgentServicePlaysEpisodes(t *testing.T) {
	needNode(t)
	js, err := calcAgent()
	if err != nil {
		t.Fatal(err)
	}
	g := newAgentRig(t, agent.Config{Service: true, ServiceKey: "sk-service", Reward: agent.FromTask, Time: time.Minute})
	if code, out, _ := post(t, g.url+"/mtgrpo/episodes/next", "wrong", map[string]any{"wait_s": 0}); code != 401 || jpath(out, "error", "code") != codeInvalidKey {
		t.Errorf("a wrong service key: %d %v", code, out)
	}
	req, _ := http.NewRequest("POST", g.url+"/mtgrpo/episodes/next", strings.NewReader(`{"wait_s": 0.1}`))
	req.Header.Set("Authorization", "Bearer sk-service")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 204 {
		t.Errorf("no episode offered: %v %v, want 204", res, err)
	} else {
		res.Body.Close()
	}
	g.startService(t, filepath.Join(filepath.Dir(js), "calc_service.js"))
	trajs := g.play(t, multTasks(t, 3), 2, 9)
	if len(trajs) != 6 {
		t.Fatalf("%d trajectories, want 6", len(trajs))
	}
	g.checkTokenExact(t, trajs, 2)
}

// A service that never comes, one that takes an episode and abandons it, and one that fails it
// each fail the episode with the cause when its time (env.agent.time, from the offer) runs out,
// or at once; the batch returns.
func TestAgentServiceFailuresAreContained(t *testing.T) {
	needNode(t)
	g := newAgentRig(t, agent.Config{Service: true, Reward: agent.FromProgram})
	tasks := multTasks(t, 1)
	const take = `const u = process.env.MTGRPO_URL; (async () => { for (;;) {
		const r = await fetch(u + "/mtgrpo/episodes/next", {method: "POST", body: '{"wait_s": 1}'});
		if (r.status !== 200) continue;
		const ep = await r.json();
		const h = {Authorization: "Bearer " + ep.api_key, "Content-Type": "application/json"};
		await fetch(ep.base_url + "/chat/completions", {method: "POST", headers: h, body: JSON.stringify({model: "m", messages: ep.messages})});
		`
	for _, c := range []struct {
		name, service, want string
	}{
		{"none", "", "no agent service took it within env.agent.time (2s)"}, // "took it": by the time limit
		{"abandons", take + `} })()`, "took it and did not finish it"},
		{"fails", take + `await fetch(ep.base_url + "/mtgrpo/finish", {method: "POST", headers: h, body: '{"error": "the sandbox is down"}'}); } })()`,
			"agent service: reported an error: the sandbox is down"},
		{"no reward", take + `await fetch(ep.base_url + "/mtgrpo/finish", {method: "POST", headers: h, body: "{}"}); } })()`,
			"agent service: reported no reward"},
		{"scores", take + `await fetch(ep.base_url + "/mtgrpo/finish", {method: "POST", headers: h, body: '{"reward": 0.25}'}); } })()`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A service has time to start node on a loaded machine and take the episode; the
			// ones that finish it end the episode at once.
			limit := time.Minute
			switch c.name {
			case "none":
				limit = 2 * time.Second
			case "abandons":
				limit = 6 * time.Second
			}
			g.agents.cfg.Time = limit
			if c.service != "" {
				defer g.startService(t, "-e", c.service)()
			}
			t0 := time.Now()
			tr := g.play(t, tasks, 1, 1)[0]
			took := time.Since(t0)
			switch {
			case c.want == "" && (tr.Err != nil || tr.Reward != 0.25):
				t.Errorf("%v, reward %v; want 0.25", tr.Err, tr.Reward)
			case c.want != "" && (tr.Err == nil || !strings.Contains(tr.Err.Error(), c.want) || tr.End != rollout.EndError):
				t.Errorf("%v; want %q", tr.Err, c.want)
			}
			if limit < time.Minute && took < limit {
				t.Errorf("failed after %v: want the %v limit", took, limit)
			}
			t.Logf("%v after %v", tr.Err, took.Round(time.Millisecond))
		})
	}
}
