// goasynq drives real Go asynq (the version go.mod pins) for taskq's interoperability tests: it enqueues with
// asynq's client, reads back with asynq's Inspector (what asynq's own CLI prints), runs an asynq.Server and an
// asynq.Scheduler, and acts as asynq's Inspector acts. Every command prints JSON on stdout.
//
// The Redis is REDIS_URL (redis://host:port/db). A server records each handler start as
// "go|<task id>|<retry count>|<server name>" on the list "interop:runs" of the same database, so a test can see
// which side ran which attempt.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: goasynq <enqueue|task|ls|stats|history|servers|schedulers|groups|serve|schedule|act> ..."))
	}
	opt, err := asynq.ParseRedisURI(env("REDIS_URL", "redis://127.0.0.1:6379/9"))
	check(err)
	cmd, args := os.Args[1], os.Args[2:]
	switch cmd {
	case "enqueue":
		enqueue(opt)
	case "serve":
		serve(opt, args)
	case "schedule":
		schedule(opt, args)
	default:
		inspect(opt, cmd, args)
	}
}

// EnqueueSpec is what the enqueue command reads on stdin: each option of asynq's client, unset when zero.
type EnqueueSpec struct {
	Type           string            `json:"type"`
	Payload        []byte            `json:"payload"` // base64 in JSON
	NilPayload     bool              `json:"nil_payload"`
	Headers        map[string]string `json:"headers"`
	Queue          string            `json:"queue"`
	MaxRetry       *int              `json:"max_retry"`
	TimeoutSeconds float64           `json:"timeout_seconds"`
	DeadlineUnix   int64             `json:"deadline_unix"`
	UniqueSeconds  float64           `json:"unique_seconds"`
	ProcessAtUnix  int64             `json:"process_at_unix"`
	ProcessInSecs  float64           `json:"process_in_seconds"`
	TaskID         string            `json:"task_id"`
	RetentionSecs  float64           `json:"retention_seconds"`
	Group          string            `json:"group"`
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func enqueue(opt asynq.RedisConnOpt) {
	var spec EnqueueSpec
	check(json.NewDecoder(os.Stdin).Decode(&spec))
	var opts []asynq.Option
	if spec.Queue != "" {
		opts = append(opts, asynq.Queue(spec.Queue))
	}
	if spec.MaxRetry != nil {
		opts = append(opts, asynq.MaxRetry(*spec.MaxRetry))
	}
	if spec.TimeoutSeconds != 0 {
		opts = append(opts, asynq.Timeout(seconds(spec.TimeoutSeconds)))
	}
	if spec.DeadlineUnix != 0 {
		opts = append(opts, asynq.Deadline(time.Unix(spec.DeadlineUnix, 0)))
	}
	if spec.UniqueSeconds != 0 {
		opts = append(opts, asynq.Unique(seconds(spec.UniqueSeconds)))
	}
	if spec.ProcessAtUnix != 0 {
		opts = append(opts, asynq.ProcessAt(time.Unix(spec.ProcessAtUnix, 0)))
	}
	if spec.ProcessInSecs != 0 {
		opts = append(opts, asynq.ProcessIn(seconds(spec.ProcessInSecs)))
	}
	if spec.TaskID != "" {
		opts = append(opts, asynq.TaskID(spec.TaskID))
	}
	if spec.RetentionSecs != 0 {
		opts = append(opts, asynq.Retention(seconds(spec.RetentionSecs)))
	}
	if spec.Group != "" {
		opts = append(opts, asynq.Group(spec.Group))
	}
	payload := spec.Payload
	if spec.NilPayload {
		payload = nil
	}
	client := asynq.NewClient(opt)
	defer client.Close()
	task := asynq.NewTaskWithHeaders(spec.Type, payload, spec.Headers, opts...)
	info, err := client.Enqueue(task)
	check(err)
	emit(taskJSON(info))
}

// taskJSON is every field of asynq's TaskInfo, times as Unix seconds (0 for the zero time), durations in seconds.
func taskJSON(t *asynq.TaskInfo) map[string]any {
	return map[string]any{
		"id": t.ID, "queue": t.Queue, "type": t.Type, "payload": t.Payload, "headers": t.Headers,
		"state": t.State.String(), "max_retry": t.MaxRetry, "retried": t.Retried, "last_err": t.LastErr,
		"last_failed_at": unix(t.LastFailedAt), "timeout_seconds": t.Timeout.Seconds(),
		"deadline": unix(t.Deadline), "group": t.Group, "next_process_at": unix(t.NextProcessAt),
		"is_orphaned": t.IsOrphaned, "retention_seconds": t.Retention.Seconds(),
		"completed_at": unix(t.CompletedAt), "result": t.Result,
	}
}

func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// inspect runs one read or action of asynq's Inspector: what asynq's CLI does for `stats`, `task ls`,
// `server ls`, `cron ls|history`, `group ls`, and the operator actions.
func inspect(opt asynq.RedisConnOpt, cmd string, args []string) {
	in := asynq.NewInspector(opt)
	defer in.Close()
	arg := func(i int) string {
		if i >= len(args) {
			fail(fmt.Errorf("%s: argument %d is missing", cmd, i+1))
		}
		return args[i]
	}
	switch cmd {
	case "task": // task <queue> <id>
		info, err := in.GetTaskInfo(arg(0), arg(1))
		check(err)
		emit(taskJSON(info))
	case "ls": // ls <queue> <state> [group]
		emit(list(in, arg(0), arg(1), args))
	case "stats":
		queues, err := in.Queues()
		check(err)
		out := []map[string]any{}
		for _, q := range queues {
			info, err := in.GetQueueInfo(q)
			check(err)
			out = append(out, map[string]any{
				"queue": info.Queue, "memory_usage": info.MemoryUsage, "latency_seconds": info.Latency.Seconds(),
				"size": info.Size, "groups": info.Groups, "pending": info.Pending, "active": info.Active,
				"scheduled": info.Scheduled, "retry": info.Retry, "archived": info.Archived,
				"completed": info.Completed, "aggregating": info.Aggregating, "processed": info.Processed,
				"failed": info.Failed, "processed_total": info.ProcessedTotal, "failed_total": info.FailedTotal,
				"paused": info.Paused,
			})
		}
		emit(out)
	case "history": // history <queue> <days>
		days, err := strconv.Atoi(arg(1))
		check(err)
		stats, err := in.History(arg(0), days)
		check(err)
		out := []map[string]any{}
		for _, d := range stats {
			out = append(out, map[string]any{"date": d.Date.Format("2006-01-02"), "processed": d.Processed, "failed": d.Failed})
		}
		emit(out)
	case "servers":
		servers, err := in.Servers()
		check(err)
		out := []map[string]any{}
		for _, s := range servers {
			workers := []map[string]any{}
			for _, w := range s.ActiveWorkers {
				workers = append(workers, map[string]any{
					"task_id": w.TaskID, "task_type": w.TaskType, "payload": w.TaskPayload, "queue": w.Queue,
					"started": unix(w.Started), "deadline": unix(w.Deadline),
				})
			}
			out = append(out, map[string]any{
				"id": s.ID, "host": s.Host, "pid": s.PID, "concurrency": s.Concurrency, "queues": s.Queues,
				"strict_priority": s.StrictPriority, "started": unix(s.Started), "status": s.Status,
				"active_workers": workers,
			})
		}
		emit(out)
	case "schedulers":
		entries, err := in.SchedulerEntries()
		check(err)
		out := []map[string]any{}
		for _, e := range entries {
			opts := []string{}
			for _, o := range e.Opts {
				opts = append(opts, o.String())
			}
			out = append(out, map[string]any{
				"id": e.ID, "spec": e.Spec, "type": e.Task.Type(), "payload": e.Task.Payload(), "opts": opts,
				"next": unix(e.Next), "prev": unix(e.Prev),
			})
		}
		emit(out)
	case "cron-history": // cron-history <entry id>
		events, err := in.ListSchedulerEnqueueEvents(arg(0))
		check(err)
		out := []map[string]any{}
		for _, e := range events {
			out = append(out, map[string]any{"task_id": e.TaskID, "enqueued_at": unix(e.EnqueuedAt)})
		}
		emit(out)
	case "groups": // groups <queue>
		groups, err := in.Groups(arg(0))
		check(err)
		out := []map[string]any{}
		for _, g := range groups {
			out = append(out, map[string]any{"group": g.Group, "size": g.Size})
		}
		emit(out)
	case "act": // act <pause|unpause|run|archive|delete|cancel|update|delete-queue|run-all|archive-all|delete-all> ...
		act(in, arg(0), args[1:])
	default:
		fail(fmt.Errorf("unknown command %q", cmd))
	}
}

func list(in *asynq.Inspector, queue, state string, args []string) []map[string]any {
	var tasks []*asynq.TaskInfo
	var err error
	page := asynq.PageSize(1000)
	switch state {
	case "pending":
		tasks, err = in.ListPendingTasks(queue, page)
	case "active":
		tasks, err = in.ListActiveTasks(queue, page)
	case "scheduled":
		tasks, err = in.ListScheduledTasks(queue, page)
	case "retry":
		tasks, err = in.ListRetryTasks(queue, page)
	case "archived":
		tasks, err = in.ListArchivedTasks(queue, page)
	case "completed":
		tasks, err = in.ListCompletedTasks(queue, page)
	case "aggregating":
		tasks, err = in.ListAggregatingTasks(queue, args[2], page)
	default:
		err = fmt.Errorf("unknown state %q", state)
	}
	check(err)
	out := []map[string]any{}
	for _, t := range tasks {
		out = append(out, taskJSON(t))
	}
	return out
}

func act(in *asynq.Inspector, action string, args []string) {
	var err error
	switch action {
	case "pause":
		err = in.PauseQueue(args[0])
	case "unpause":
		err = in.UnpauseQueue(args[0])
	case "run":
		err = in.RunTask(args[0], args[1])
	case "archive":
		err = in.ArchiveTask(args[0], args[1])
	case "delete":
		err = in.DeleteTask(args[0], args[1])
	case "cancel":
		err = in.CancelProcessing(args[0])
	case "update": // update <queue> <task id> <payload>
		err = in.UpdateTaskPayload(args[0], args[1], []byte(args[2]))
	case "delete-queue": // delete-queue <queue> <force: true|false>
		err = in.DeleteQueue(args[0], args[1] == "true")
	case "run-all", "archive-all", "delete-all": // <action>-all <queue> <state> [group]
		n, err := actAll(in, action, args[0], args[1], append(args[2:], "")[0])
		check(err)
		emit(map[string]any{"ok": true, "n": n})
		return
	default:
		err = fmt.Errorf("unknown action %q", action)
	}
	check(err)
	emit(map[string]any{"ok": true})
}

// actAll runs the Inspector's "...All...Tasks" method of an action and a state ("aggregating" takes a group).
func actAll(in *asynq.Inspector, action, queue, state, group string) (int, error) {
	bulk := map[string]func(string) (int, error){
		"run-all/scheduled":     in.RunAllScheduledTasks,
		"run-all/retry":         in.RunAllRetryTasks,
		"run-all/archived":      in.RunAllArchivedTasks,
		"archive-all/pending":   in.ArchiveAllPendingTasks,
		"archive-all/scheduled": in.ArchiveAllScheduledTasks,
		"archive-all/retry":     in.ArchiveAllRetryTasks,
		"delete-all/pending":    in.DeleteAllPendingTasks,
		"delete-all/scheduled":  in.DeleteAllScheduledTasks,
		"delete-all/retry":      in.DeleteAllRetryTasks,
		"delete-all/archived":   in.DeleteAllArchivedTasks,
		"delete-all/completed":  in.DeleteAllCompletedTasks,
	}
	grouped := map[string]func(string, string) (int, error){
		"run-all":     in.RunAllAggregatingTasks,
		"archive-all": in.ArchiveAllAggregatingTasks,
		"delete-all":  in.DeleteAllAggregatingTasks,
	}
	if state == "aggregating" {
		return grouped[action](queue, group)
	}
	if f, ok := bulk[action+"/"+state]; ok {
		return f(queue)
	}
	return 0, fmt.Errorf("no %s for state %q", action, state)
}

// serve runs an asynq.Server until SIGTERM or SIGINT. Flags: -queues "a=3,b=1", -concurrency, -name (recorded
// with each run), -strict, -retry-delay (seconds; asynq's default backoff when negative), -shutdown-timeout.
// Handlers by task type: "fail" returns an error, "skip" wraps asynq.SkipRetry, "result" writes the payload as
// the result, "sleep" sleeps the payload's milliseconds (or until cancelled), anything else succeeds.
func serve(opt asynq.RedisConnOpt, args []string) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	queues := fs.String("queues", "default=1", "queue=priority,...")
	concurrency := fs.Int("concurrency", 4, "workers")
	name := fs.String("name", "go", "recorded with each run")
	strict := fs.Bool("strict", false, "strict priority")
	retryDelay := fs.Float64("retry-delay", -1, "seconds between retries; asynq's default when negative")
	shutdown := fs.Float64("shutdown-timeout", 8, "seconds")
	check(fs.Parse(args))
	weights := map[string]int{}
	for _, part := range strings.Split(*queues, ",") {
		q, w, _ := strings.Cut(part, "=")
		n, err := strconv.Atoi(w)
		check(err)
		weights[q] = n
	}
	cfg := asynq.Config{
		Concurrency: *concurrency, Queues: weights, StrictPriority: *strict,
		ShutdownTimeout: seconds(*shutdown), TaskCheckInterval: 50 * time.Millisecond,
		DelayedTaskCheckInterval: time.Second, LogLevel: asynq.WarnLevel,
	}
	if *retryDelay >= 0 {
		cfg.RetryDelayFunc = func(int, error, *asynq.Task) time.Duration { return seconds(*retryDelay) }
	}
	rdb := opt.MakeRedisClient().(redis.UniversalClient)
	defer rdb.Close()
	srv := asynq.NewServer(opt, cfg)
	handler := asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		retried, _ := asynq.GetRetryCount(ctx)
		rdb.RPush(ctx, "interop:runs", fmt.Sprintf("go|%s|%d|%s", id, retried, *name))
		switch t.Type() {
		case "fail":
			return errors.New("go handler failed")
		case "skip":
			return fmt.Errorf("go handler gave up: %w", asynq.SkipRetry)
		case "result":
			_, err := t.ResultWriter().Write(t.Payload())
			return err
		case "sleep":
			ms, _ := strconv.Atoi(string(t.Payload()))
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	check(srv.Start(handler))
	fmt.Println(`{"serving": true}`)
	waitForSignal()
	srv.Shutdown()
}

// schedule runs an asynq.Scheduler with one entry until SIGTERM: -spec, -type, -payload, -queue.
func schedule(opt asynq.RedisConnOpt, args []string) {
	fs := flag.NewFlagSet("schedule", flag.ExitOnError)
	spec := fs.String("spec", "@every 1s", "cron spec")
	taskType := fs.String("type", "tick", "task type")
	payload := fs.String("payload", "", "payload")
	queue := fs.String("queue", "default", "queue")
	check(fs.Parse(args))
	scheduler := asynq.NewScheduler(opt, &asynq.SchedulerOpts{LogLevel: asynq.WarnLevel})
	id, err := scheduler.Register(*spec, asynq.NewTask(*taskType, []byte(*payload)), asynq.Queue(*queue), asynq.MaxRetry(2))
	check(err)
	check(scheduler.Start())
	emit(map[string]any{"entry_id": id})
	waitForSignal()
	scheduler.Shutdown()
}

func waitForSignal() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func emit(v any) {
	check(json.NewEncoder(os.Stdout).Encode(v))
}

func check(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "goasynq:", err)
	os.Exit(1)
}
