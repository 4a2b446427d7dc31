package job

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/progress"
	"github.com/mtgrpo/mtgrpo/cmd/internal/report"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/internal/staged"
	"github.com/mtgrpo/mtgrpo/model"
)

// finish exports the trained model, writes the report page and prints the summary.
func (j *job) finish() error {
	if !j.main() {
		return nil
	}
	exported := ""
	if j.cfg.Train.Export {
		exported = ModelDir
		if j.policy.Model.LoRA() != nil {
			exported = AdapterDir
		}
		dst := filepath.Join(j.cfg.RunDir, exported)
		if err := exportPolicy(j.policy.Model, dst, j.cfg.Train.ExportDType, j.base, j.o.Bars); err != nil {
			return err
		}
		j.log.Info().Str("dir", dst).Msg(exported + " exported")
	}
	if j.cfg.Train.Report {
		r, err := report.Load(j.cfg.RunDir)
		if err == nil {
			_, err = report.WritePage(r)
		}
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	recs, err := rundir.ReadMetrics(j.cfg.RunDir)
	if err != nil {
		return err
	}
	fmt.Fprint(j.out(), Summary(recs, j.sftSteps, j.rlSteps, time.Since(j.start), j.cfg.RunDir, exported, j.cfg.Train.Report))
	fmt.Fprint(j.out(), Unused(j.cfg.Warnings()))
	return nil
}

// Unused is the end of the summary that lists the settings accepted without effect (the
// configuration's warnings, logged at the start as well), so that a run that ignored one of
// them does not end looking clean; "" when there are none.
func Unused(warnings []string) string {
	if len(warnings) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d setting(s) had no effect in this run (also at the start of train.log):\n", len(warnings))
	for _, w := range warnings {
		fmt.Fprintf(&b, "  %s\n", w)
	}
	return b.String()
}

// exportPolicy writes the trained policy at dst: its adapters in PEFT's layout (LoRA, in float32,
// naming base), or the model (ExportModel).
func exportPolicy(m *model.Model, dst, dtype string, base model.AdapterBase, bars *progress.Bars) error {
	if m.LoRA() == nil {
		return ExportModel(m, dst, dtype, bars)
	}
	d, err := staged.Begin(dst)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer d.Discard()
	if err := m.SaveAdapters(d.Path, base); err != nil {
		return err
	}
	if err := d.Commit(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// ExportModel writes m as a model directory at dst: into a temporary directory beside it first,
// then renamed into place (an existing dst is replaced only then; internal/staged), so dst is
// always a complete model. dtype "" keeps the model's. Run on the torch thread.
func ExportModel(m *model.Model, dst, dtype string, bars *progress.Bars) error {
	d, err := staged.Begin(dst)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer d.Discard()
	if err := m.Export(d.Path, model.ExportOptions{DType: dtype, Progress: &progress.Load{Bars: bars}}); err != nil {
		return err
	}
	if err := d.Commit(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// Summary is the end-of-run table: the validation reward, accuracy and tool calls per episode
// before training, after the SFT warm-up and at the end, read back from the run's metrics (so a
// resumed run reports its whole history); exported is the directory the policy was exported to
// in runDir (ModelDir, AdapterDir, "" for none).
func Summary(recs []rundir.Record, sftSteps, rlSteps int, wall time.Duration, runDir, exported string, reported bool) string {
	type row struct {
		label string
		m     rundir.Metrics
	}
	var rows []row
	var last rundir.Record
	for _, r := range recs {
		if _, ok := r.Values[grpo.ValScore]; !ok {
			continue
		}
		switch {
		case r.Step == 0:
			rows = append(rows, row{"before training", r.Values})
		case r.Step == sftSteps && sftSteps > 0:
			rows = append(rows, row{fmt.Sprintf("after SFT (step %d)", r.Step), r.Values})
		}
		last = r
	}
	if last.Values != nil && last.Step > sftSteps {
		rows = append(rows, row{fmt.Sprintf("after RL (step %d)", last.Step), last.Values})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nmtgrpo train: %d steps (%d SFT, %d RL) in %v\n", sftSteps+rlSteps, sftSteps, rlSteps, wall.Round(time.Second))
	if len(rows) > 0 {
		w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "validation\treward\tformat\taccuracy\tstrict accuracy\tpass@1\ttool calls\t")
		for _, r := range rows {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.label, num(r.m, grpo.ValScore), num(r.m, grpo.ValFormat),
				num(r.m, grpo.ValAccuracy), num(r.m, grpo.ValAccuracyStrict), num(r.m, grpo.ValPass1), num(r.m, grpo.ValToolCalls))
		}
		w.Flush()
	}
	fmt.Fprintf(&b, "run: %s", runDir)
	if exported != "" {
		fmt.Fprintf(&b, "  %s: %s", exported, filepath.Join(runDir, exported))
	}
	if reported {
		fmt.Fprintf(&b, "  report: %s", filepath.Join(runDir, report.PageFile))
	}
	b.WriteString("\n")
	return b.String()
}

func num(m rundir.Metrics, k string) string {
	v, ok := m[k]
	if !ok || math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}
