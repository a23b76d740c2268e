// SPDX-License-Identifier: MIT
/* purge-bench --plot: data and script in temp files, gnuplot run on them. */
#include "bench-plot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

/* Look gnuplot up ourselves: after fork() an exec failure can only be
 * reported as an exit status, too late for a clear message. */
static bool find_in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		snprintf(out, len, "%.*s/%s", (int)n, path, name);
		if (n && access(out, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

static FILE *temp_file(char *name, size_t len)
{
	const char *dir = getenv("TMPDIR");
	snprintf(name, len, "%s/purge-bench-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(name);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(name);
	}
	return f;
}

/* One gnuplot data block per row kind, blocks separated by two blank lines
 * (gnuplot's "index").  Rows without a vlen span the x range as a flat line. */
static void write_block(FILE *f, const struct bench_report *r, enum bench_row kind)
{
	const struct bench_opts *o = r->o;
	fprintf(f, "# %s\n", bench_row_name(kind));
	for (size_t i = 0; i < r->res->nrows; i++) {
		const struct bench_result *x = &r->res->rows[i];
		if (x->kind != kind || x->skipped)
			continue;
		double y = bench_metrics(r, i).ns_per_page;
		if (x->vlen)
			fprintf(f, "%u %.3f\n", x->vlen, y);
		else
			fprintf(f, "%u %.3f\n%u %.3f\n", o->vlens[0], y, o->vlens[o->nvlens - 1],
			        y);
	}
	fprintf(f, "\n\n");
}

static bool has_data(const struct bench_report *r, enum bench_row kind)
{
	for (size_t i = 0; i < r->res->nrows; i++)
		if (r->res->rows[i].kind == kind && !r->res->rows[i].skipped)
			return true;
	return false;
}

/* gnuplot single-quoted string: a quote is written twice. */
static void gp_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static bool is_png(const char *file)
{
	size_t n = strlen(file);
	return n >= 4 && !strcasecmp(file + n - 4, ".png");
}

static void write_script(FILE *f, const char *out, const char *data, const struct bench_report *r)
{
	if (is_png(out))
		fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) "
		           "{ set terminal pngcairo size 1000,620 } else { set terminal png size "
		           "1000,620 }\n");
	else
		fprintf(f, "set terminal svg size 1000,620 dynamic\n");
	fprintf(f, "set termoption noenhanced\nset output ");
	gp_quoted(f, out);
	fprintf(f, "\nset logscale x 2\nset logscale y 10\nset grid\nset key outside right\n"
	           "set xlabel 'vlen (iovecs per process_madvise call; libpurge batch)'\n"
	           "set ylabel 'median ns per purged page'\n");
	fprintf(f, "set title 'purge-bench: %s layout, %s, %u thread(s), Linux %s, THP %s'\n",
	        bench_layout_name(r->o->layout), bench_advice_name(r->o->advice), r->o->threads,
	        r->m->kernel, r->m->thp);
	fprintf(f, "plot ");
	for (int k = 0, first = 1; k < ROW_KINDS; k++) {
		if (!has_data(r, (enum bench_row)k))
			continue; /* gnuplot stops on an empty block */
		fprintf(f, "%s", first ? "" : ", \\\n     ");
		first = 0;
		gp_quoted(f, data);
		fprintf(f, " index %d using 1:2 with linespoints title '%s'", k,
		        bench_row_name((enum bench_row)k));
	}
	fprintf(f, "\n");
}

static int run_gnuplot(const char *gnuplot, const char *script)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execl(gnuplot, "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* Data and script files, then gnuplot; the temp files go either way. */
static int draw(const char *gnuplot, const char *file, const struct bench_report *r)
{
	char data[256], script[256];
	FILE *df = temp_file(data, sizeof(data));
	if (!df)
		return -errno;
	FILE *sf = temp_file(script, sizeof(script));
	if (!sf) {
		int err = -errno;
		fclose(df);
		unlink(data);
		return err;
	}
	for (int k = 0; k < ROW_KINDS; k++)
		write_block(df, r, (enum bench_row)k);
	write_script(sf, file, data, r);
	int ret = (fclose(df) | fclose(sf)) ? -EIO : run_gnuplot(gnuplot, script);
	unlink(data);
	unlink(script);
	return ret;
}

int bench_plot(const char *file, const struct bench_report *r, char *msg, size_t len)
{
	char gnuplot[4096];
	if (!find_in_path("gnuplot", gnuplot, sizeof(gnuplot))) {
		snprintf(msg, len,
		         "--plot: gnuplot is not installed (not in PATH); %s not written. "
		         "Install gnuplot (Debian: gnuplot-nox) or plot the --csv output yourself.",
		         file);
		return -ENOENT;
	}
	int ret = draw(gnuplot, file, r);
	if (ret)
		snprintf(msg, len, "--plot: gnuplot failed to write %s (%s)", file, strerror(-ret));
	else
		snprintf(msg, len, "plot written to %s", file);
	return ret;
}
