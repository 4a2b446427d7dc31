package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/job"
	"github.com/mtgrpo/mtgrpo/cmd/internal/progress"
	"github.com/mtgrpo/mtgrpo/cmd/internal/setup"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout/serve"
)

var serveCommand = command{
	name: "serve",
	summary: "Serve a model or a checkpoint on an OpenAI-compatible endpoint (POST /v1/chat/completions, GET\n" +
		"/v1/models), the one agent programs train against, with no training: for trying an agent against\n" +
		"the policy by hand. Every request's own sampling applies (temperature, top_p, seed, max_tokens,\n" +
		"stop); a conversation's next call reuses its earlier calls' ids and KV cache. SIGINT or SIGTERM\n" +
		"stops it after the calls in flight (at most --grace).",
	examples: []string{
		"mtgrpo serve --model runs/demo/model",
		"mtgrpo serve --checkpoint runs/demo --port 8000   # the run's newest checkpoint",
		"mtgrpo serve --model Qwen/Qwen2.5-0.5B-Instruct --device cuda --slots 32 --api-key sk-local",
		"OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=sk-local node agent.js",
	},
}

// serveOptions are serve's flags.
type serveOptions struct {
	model, checkpoint, host, name, apiKey, device, dtype string
	port, slots, cacheSlots, maxLen                      int
	seed                                                 uint64
	grace                                                time.Duration
}

// serveCmd is `mtgrpo serve`.
func serveCmd(args []string) error {
	fs := serveCommand.flags()
	var o serveOptions
	fs.StringVar(&o.model, "model", "", "model directory or Hugging Face Hub id ORG/NAME[@REVISION]")
	fs.StringVar(&o.checkpoint, "checkpoint", "", "a checkpoint directory, or a run directory (its newest checkpoint); its rollout.chat_vars apply")
	fs.StringVar(&o.host, "host", "127.0.0.1", "address to listen on (0.0.0.0: every interface)")
	fs.IntVar(&o.port, "port", 8000, "port to listen on (0: a free one, printed)")
	fs.StringVar(&o.name, "served-model-name", "", "the model id /v1/models lists and responses carry (default: --model or --checkpoint as given)")
	fs.StringVar(&o.apiKey, "api-key", "", "serve only requests bearing this key (default: any key, or none)")
	fs.IntVar(&o.slots, "slots", 8, "calls generated at once (the engine's KV slots); more wait in line")
	fs.IntVar(&o.cacheSlots, "cache-slots", -1, "KV slots keeping finished calls for their conversation's next call (default: --slots; 0: no reuse)")
	fs.Lookup("cache-slots").DefValue = "0" // not printed: the default, -1, stands for --slots' value, as the usage says
	fs.IntVar(&o.maxLen, "max-len", 4096, "KV cache length of a call: prompt and completion together")
	fs.StringVar(&o.device, "device", "cpu", "cpu, cuda or cuda:N")
	fs.StringVar(&o.dtype, "dtype", "", "compute dtype (default: float32 on cpu, the checkpoint's otherwise)")
	fs.Uint64Var(&o.seed, "seed", 0, "seeds the sampling of requests that bring no seed")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "on SIGINT or SIGTERM, how long the calls in flight may take to finish")
	threadSpec := threadsFlag(fs)
	if err := serveCommand.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("serve: unexpected argument %q (see mtgrpo serve --help)", fs.Arg(0))
	}
	if err := o.check(); err != nil {
		return err
	}
	if err := checkDevice("serve", o.device, 1); err != nil {
		return err
	}
	dir, adapter, vars, err := o.resolve()
	if err != nil {
		return err
	}
	// Listen before loading: a taken port is a setup mistake, reported before any work.
	ln, err := net.Listen("tcp", net.JoinHostPort(o.host, strconv.Itoa(o.port)))
	if err != nil {
		return usagef("serve: --host %s --port %d: %v", o.host, o.port, err)
	}
	defer ln.Close()
	// A model that does not read is left to the loader, which names what is wrong with it.
	reserves, _ := addressSpaceOf(dir, o.device, o.dtype, o.slots+o.cacheSlots, o.maxLen)
	bars := progress.New(os.Stderr)
	defer bars.Wait()
	return withTorch(*threadSpec, func() error {
		p, err := setup.Open(setup.Options{Dir: dir, Adapter: adapter, Device: o.device, DType: o.dtype, Slots: o.slots, MaxLen: o.maxLen,
			Seed: o.seed, Parked: o.cacheSlots, Progress: &progress.Load{Bars: bars}})
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer p.Close()
		srv, err := serve.New(p.Engine, p.Cache, p.Tok, p.Backend.StopTokenIDs(), serve.Config{Model: o.name, ChatVars: vars,
			AnyKey: true, APIKey: o.apiKey, Log: func(s string) { fmt.Fprintln(os.Stderr, "mtgrpo", s) }})
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		return runServer(srv, ln, o.grace, p.Cache)
	}, reserves...)
}

// check refuses bad flag values, each by name, before anything is loaded.
func (o *serveOptions) check() error {
	switch {
	case o.model == "" && o.checkpoint == "":
		return usagef("serve: give --model DIR (or a Hub id) or --checkpoint PATH")
	case o.model != "" && o.checkpoint != "":
		return usagef("serve: give --model or --checkpoint, not both")
	case o.port < 0 || o.port > 65535:
		return usagef("serve: --port %d: must be in [0, 65535]", o.port)
	case o.grace < 0:
		return usagef("serve: --grace %v: must be >= 0", o.grace)
	}
	if o.dtype != "" && o.dtype != "auto" {
		if _, err := model.ParseDType(o.dtype); err != nil {
			return usagef("serve: --dtype: %v", err)
		}
	}
	if o.cacheSlots == -1 { // the default
		o.cacheSlots = o.slots
	}
	if err := atLeast("serve", intFlag{"slots", o.slots, 1}, intFlag{"cache-slots", o.cacheSlots, 0}, intFlag{"max-len", o.maxLen, 2}); err != nil {
		return err
	}
	if o.name == "" {
		o.name = o.model + o.checkpoint
	}
	return nil
}

// resolve finds the model directory (a Hub id is fetched, a run's newest checkpoint found) and,
// for a checkpoint, its LoRA adapters ("": none) and the chat template variables it was trained
// with.
func (o *serveOptions) resolve() (dir, adapter string, vars map[string]any, err error) {
	if o.checkpoint == "" {
		dir, err := resolveModel("serve", "--model", o.model)
		return dir, "", nil, err
	}
	ck, err := evalCheckpoint(o.checkpoint)
	if err != nil {
		return "", "", nil, usagef("serve: %v", err)
	}
	cfg, err := job.SavedConfig(ck.Dir)
	if err != nil {
		return "", "", nil, fmt.Errorf("serve: %w", err)
	}
	if dir, adapter, err = job.PolicyOf(ck.Dir); err != nil {
		return "", "", nil, fmt.Errorf("serve: %w", err)
	}
	if adapter != "" { // the base of a LoRA run: a directory or a Hub id
		if dir, err = resolveModel("serve", "the checkpoint's base model", dir); err != nil {
			return "", "", nil, err
		}
	}
	return dir, adapter, cfg.Rollout.ChatVars, nil
}

// runServer serves on ln, the engine driven on this goroutine (the torch thread), until SIGINT
// or SIGTERM; the calls in flight then have grace to finish before they are aborted.
func runServer(srv *serve.Server, ln net.Listener, grace time.Duration, cache *serve.PrefixCache) error {
	sig, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second}
	stop := make(chan struct{})
	halt := sync.OnceFunc(func() { close(stop) })
	served := make(chan error, 1)
	go func() {
		served <- hs.Serve(ln)
		halt()
	}()
	go func() {
		select {
		case <-sig.Done():
			stopSignals() // a second signal stops at once
			fmt.Fprintf(os.Stderr, "mtgrpo serve: stopping: finishing the calls in flight (at most %v)\n", grace)
		case <-stop: // the engine or the listener failed
		}
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			hs.Close()
		}
		halt()
	}()
	fmt.Fprintf(os.Stderr, "mtgrpo serve: %s on http://%s/v1 (POST /v1/chat/completions, GET /v1/models)\n", srv.Model(), ln.Addr())
	err := srv.Run(context.Background(), stop)
	halt()
	if e := <-served; err == nil && !errors.Is(e, http.ErrServerClosed) {
		err = fmt.Errorf("serve: %w", e)
	}
	if cache != nil {
		st := cache.Stats()
		fmt.Fprintf(os.Stderr, "mtgrpo serve: stopped; KV reuse: %d calls started from a kept cache, %d prompt tokens not run again\n", st.Hits, st.Reused)
	}
	return err
}
