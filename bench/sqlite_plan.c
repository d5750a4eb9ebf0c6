/* EXPLAIN QUERY PLAN with the SQLite the server links (libsqlite3-sys's bundled amalgamation,
   built with its flags), not the system's `sqlite3` shell, whose older planner can choose
   another plan for the same statement and database. Built by bench/storefront.py (`plans`):

       cc -O2 -o sqlite_plan bench/sqlite_plan.c $CARGO_HOME/registry/src/<index>/libsqlite3-sys-<v>/sqlite3/sqlite3.c \
          -DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_STAT4 … -lpthread -lm -ldl

   Usage: sqlite_plan DB < statements, separated by a line holding only ";;". A statement
   that begins with EXPLAIN QUERY PLAN prints its plan (id, parent, detail); any other runs
   and prints its rows' count and time. The database is opened read-only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sqlite3.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    sqlite3 *db;
    if (argc < 2 || sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, 0)) {
        fprintf(stderr, "usage: sqlite_plan DB < statements\n");
        return 2;
    }
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf - 1, stdin);
    buf[n] = 0;
    printf("-- SQLite %s\n", sqlite3_libversion());
    for (char *s = buf, *next; s && *s; s = next) {
        next = strstr(s, "\n;;\n");
        if (next) {
            *next = 0;
            next += 4;
        }
        while (*s == '\n' || *s == ' ') s++;
        if (!*s) continue;
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, s, -1, &st, 0)) {
            printf("!! %s\n", sqlite3_errmsg(db));
            continue;
        }
        int plan = strncmp(s, "EXPLAIN QUERY PLAN", 18) == 0;
        double started = now_ms();
        int rows = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            rows++;
            if (plan)
                printf("  %d %d %s\n", sqlite3_column_int(st, 0), sqlite3_column_int(st, 1),
                       (const char *)sqlite3_column_text(st, 3));
        }
        if (!plan) printf("  %d rows in %.2f ms\n", rows, now_ms() - started);
        printf(";;\n");
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return 0;
}
