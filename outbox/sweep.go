package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
)

// Sweep is a periodic clean-up. Each deletes or expires only what is
// already dead, so its interval bounds how long such rows linger, not
// correctness: reads and gates check expiry themselves.
type Sweep struct {
	Name  string
	Every time.Duration
	Run   func(ctx context.Context) error
}

type sweepArgs struct {
	Name string `json:"name"`
}

func (sweepArgs) Kind() string { return "sweep" }

// InsertOpts: a failed sweep is not retried; the next period runs it.
func (sweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, MaxAttempts: 1}
}

type sweepWorker struct {
	river.WorkerDefaults[sweepArgs]
	byName map[string]Sweep
}

func (w *sweepWorker) Work(ctx context.Context, job *river.Job[sweepArgs]) error {
	s, ok := w.byName[job.Args.Name]
	if !ok {
		// A sweep another replica's binary knows and this one does not
		// (a rolling deploy): nothing to do here.
		return river.JobCancel(fmt.Errorf("unknown sweep %q", job.Args.Name))
	}
	return s.Run(ctx)
}

// addSweeps registers the sweep worker and returns the periodic jobs. River
// enqueues periodic jobs on the elected leader only, so each sweep runs
// once per period in the cluster, not once per replica.
func addSweeps(workers *river.Workers, sweeps []Sweep) ([]*river.PeriodicJob, error) {
	w := &sweepWorker{byName: map[string]Sweep{}}
	var jobs []*river.PeriodicJob
	for _, s := range sweeps {
		if _, dup := w.byName[s.Name]; dup || s.Every <= 0 {
			return nil, fmt.Errorf("outbox: sweep %q: duplicate name or no interval", s.Name)
		}
		w.byName[s.Name] = s
		name := s.Name
		jobs = append(jobs, river.NewPeriodicJob(river.PeriodicInterval(s.Every),
			func() (river.JobArgs, *river.InsertOpts) { return sweepArgs{Name: name}, nil },
			&river.PeriodicJobOpts{ID: name, RunOnStart: true}))
	}
	river.AddWorker(workers, w)
	return jobs, nil
}
