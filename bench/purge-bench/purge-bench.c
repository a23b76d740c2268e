// SPDX-License-Identifier: MIT
/* purge-bench: see bench.h for the parts, --help for what it measures. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#ifndef BENCH_PLOT_GP
#define BENCH_PLOT_GP "bench/purge-bench/plot.gp"
#endif

/* Can path be written?  Checked without truncating it (nor waiting on a
 * FIFO); a file created just for the check is removed again. */
static int check_writable(const char *what, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
	bool created = fd >= 0;
	if (fd < 0 && errno == EEXIST)
		fd = open(path, O_WRONLY | O_NONBLOCK);
	if (fd < 0) {
		fprintf(stderr, "purge-bench: %s %s: %s\n", what, path, strerror(errno));
		return -1;
	}
	close(fd);
	if (created)
		unlink(path);
	return 0;
}

/* Every output path, before a run that can take minutes. */
static int check_outputs(const struct bench_opts *o)
{
	char side[4096];
	if (o->out && check_writable("--out", o->out))
		return -1;
	if (o->out && o->csv) {
		bench_sidecar_path(o->out, side, sizeof(side));
		if (check_writable("--out: JSON sidecar", side))
			return -1;
	}
	if (!o->plot)
		return 0;
	if (check_writable("--plot", o->plot))
		return -1;
	if (system("command -v gnuplot >/dev/null 2>&1") || access(BENCH_PLOT_GP, R_OK)) {
		fprintf(stderr, "purge-bench: --plot needs gnuplot (Debian: gnuplot-nox) and %s\n",
		        BENCH_PLOT_GP);
		return -1;
	}
	return 0;
}

/* --suggest: the sweep's pick, then the purge-default rows again until two
 * runs pick the same vlen or BENCH_SUGGEST_RUNS have run.  Every run's
 * medians are kept, so the output can show where the suggestion came from. */
static int suggest(struct bench_work *w, struct bench_report *r, char *err, size_t errlen)
{
	bench_add_run(r, &r->res);
	while (!r->suggest && r->npicks < BENCH_SUGGEST_RUNS) {
		struct bench_results again;
		fprintf(stderr,
		        "purge-bench: --suggest: run %u picked %u; running purge-default "
		        "again\n",
		        r->npicks, r->picks[r->npicks - 1]);
		int ret = bench_sweep(w, r->o, 1u << ROW_DEFAULT, &again, err, errlen);
		if (!ret)
			bench_add_run(r, &again);
		bench_results_free(&again);
		if (ret)
			return ret;
	}
	return 0;
}

static int measure(struct bench_report *r, char *err, size_t errlen)
{
	const struct bench_opts *o = r->o;
	struct bench_work w;
	struct bench_helpers *hs = NULL;
	int ret = bench_work_init(&w, o, &r->m.mem, err, errlen);
	if (!ret &&
	    (ret = bench_helpers_start(o->threads - 1, &hs, r->m.pinning, sizeof(r->m.pinning))))
		snprintf(err, errlen, "starting helper threads: %s", strerror(-ret));
	if (!ret)
		ret = bench_sweep(&w, o, ~0u, &r->res, err, errlen);
	if (!ret && o->suggest)
		ret = suggest(&w, r, err, errlen);
	bench_loadavg(r->m.load_end);
	bench_helpers_stop(hs);
	r->npieces = w.npieces;
	bench_work_fini(&w);
	return ret;
}

static int write_file(const char *path, bench_printer *print, const struct bench_report *r)
{
	FILE *f = fopen(path, "w");
	if (f)
		print(f, r);
	if (!f || fclose(f)) {
		fprintf(stderr, "purge-bench: writing %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The table goes to stdout, or to stderr when stdout carries CSV or JSON. */
static int emit(const struct bench_report *r)
{
	const struct bench_opts *o = r->o;
	bench_printer *data = o->csv ? bench_print_csv : bench_print_json;
	char side[4096];
	bench_print_table(o->out || !(o->csv || o->json) ? stdout : stderr, r);
	if (!o->out && (o->csv || o->json))
		data(stdout, r);
	if (fflush(stdout) || (o->out && write_file(o->out, data, r)))
		return -1;
	if (!o->out || !o->csv)
		return 0;
	bench_sidecar_path(o->out, side, sizeof(side));
	return write_file(side, bench_print_json, r);
}

/* gnuplot -c plot.gp over the CSV in a temporary file, which gnuplot opens
 * as /dev/fd/N; what it says is shown only if it fails. */
static int plot(const struct bench_report *r)
{
	const struct bench_opts *o = r->o;
	char csv[32], title[256], line[512];
	FILE *data = tmpfile(), *log = tmpfile();
	int status = -1;
	pid_t pid = -1;
	if (data && log) {
		bench_print_csv(data, r);
		fflush(data);
		snprintf(csv, sizeof(csv), "/dev/fd/%d", fileno(data));
		snprintf(title, sizeof(title),
		         "purge-bench: %s, %s, mode %s, %u thread(s), Linux %s",
		         bench_layouts[o->layout], bench_advices[o->advice], bench_modes[o->mode],
		         o->threads, r->m.kernel);
		pid = fork();
	}
	if (pid == 0) {
		dup2(fileno(log), 1);
		dup2(fileno(log), 2);
		execlp("gnuplot", "gnuplot", "-c", BENCH_PLOT_GP, csv, o->plot, title,
		       (char *)NULL);
		_exit(127);
	}
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	bool ok = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	fprintf(stderr,
	        ok ? "purge-bench: plot written to %s\n" : "purge-bench: --plot: %s failed\n",
	        o->plot);
	for (rewind(log); !ok && log && fgets(line, sizeof(line), log);)
		fprintf(stderr, "  gnuplot: %s", line);
	if (data)
		fclose(data);
	if (log)
		fclose(log);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	static struct bench_report r;
	struct bench_opts o;
	char err[256];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int ret = bench_parse_args(argc, argv, page, bench_frame_size(), &o, err, sizeof(err));
	if (ret < 0)
		fprintf(stderr, "purge-bench: %s\n", err);
	if (ret)
		return ret < 0 ? 2 : 0; /* 1: --help or --version */
	if (check_outputs(&o))
		return 2;
	r.o = &o;
	bench_machine_read(&r.m, o.advice);
	ret = measure(&r, err, sizeof(err));
	if (ret)
		fprintf(stderr, "purge-bench: %s\n", err);
	if (!ret) {
		bench_check_noise(&r);
		ret = emit(&r) || (o.plot && plot(&r));
	}
	bench_results_free(&r.res);
	return ret ? 1 : 0;
}
