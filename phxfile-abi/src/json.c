/* A small reader for cufile.json: JSON plus the // and block comments NVIDIA's
 * file carries, and tolerant of trailing commas. Arrays are skipped (no key we
 * honour is an array); every scalar under an object is reported with its
 * dotted path. */
#include "shim.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t pos;
    int line;
    char *err;
    size_t errlen;
    cf_json_fn fn;
    void *arg;
    int depth;
} rd_t;

static int fail(rd_t *r, const char *what)
{
    snprintf(r->err, r->errlen, "line %d: %s", r->line, what);
    return -1;
}

static void skip_ws(rd_t *r)
{
    for (;;) {
        char c = r->s[r->pos];
        if (c == '\n') { r->line++; r->pos++; }
        else if (c == ' ' || c == '\t' || c == '\r') r->pos++;
        else if (c == '/' && r->s[r->pos + 1] == '/') { while (r->s[r->pos] && r->s[r->pos] != '\n') r->pos++; }
        else if (c == '/' && r->s[r->pos + 1] == '*') {
            r->pos += 2;
            while (r->s[r->pos] && !(r->s[r->pos] == '*' && r->s[r->pos + 1] == '/')) {
                if (r->s[r->pos] == '\n') r->line++;
                r->pos++;
            }
            if (r->s[r->pos]) r->pos += 2;
        } else return;
    }
}

/* reads a string into out (truncated to outlen-1); the cursor is on the opening quote */
static int read_string(rd_t *r, char *out, size_t outlen)
{
    size_t n = 0;
    r->pos++;
    for (;;) {
        char c = r->s[r->pos++];
        if (!c || c == '\n') return fail(r, "unterminated string");
        if (c == '"') break;
        if (c == '\\') {
            char e = r->s[r->pos++];
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': /* keys and values we read are ASCII: keep a placeholder */
                for (int i = 0; i < 4; i++)
                    if (!isxdigit((unsigned char)r->s[r->pos++])) return fail(r, "bad \\u escape");
                c = '?';
                break;
            case '"': case '\\': case '/': c = e; break;
            default: return fail(r, "bad escape in string");
            }
        }
        if (n + 1 < outlen) out[n++] = c;
    }
    out[n] = 0;
    return 0;
}

static int value(rd_t *r, char *path, size_t plen);

static int object(rd_t *r, char *path, size_t plen)
{
    r->pos++;
    for (;;) {
        skip_ws(r);
        if (r->s[r->pos] == '}') { r->pos++; return 0; }
        if (r->s[r->pos] != '"') return fail(r, "expected a key in quotes");
        char key[128];
        if (read_string(r, key, sizeof key)) return -1;
        skip_ws(r);
        if (r->s[r->pos] != ':') return fail(r, "expected ':' after a key");
        r->pos++;
        size_t at = strlen(path);
        snprintf(path + at, plen - at, "%s%s", at ? "." : "", key);
        int rc = value(r, path, plen);
        path[at] = 0;
        if (rc) return -1;
        skip_ws(r);
        if (r->s[r->pos] == ',') { r->pos++; continue; }
        if (r->s[r->pos] == '}') { r->pos++; return 0; }
        return fail(r, "expected ',' or '}' after a value");
    }
}

static int array(rd_t *r, char *path, size_t plen)
{
    r->pos++;
    for (;;) {
        skip_ws(r);
        if (r->s[r->pos] == ']') { r->pos++; return 0; }
        /* elements are parsed for syntax, reported under no key */
        char none[8] = "";
        (void)path; (void)plen;
        void (*saved)(const char *, char, const char *, double, int, void *) = r->fn;
        r->fn = NULL;
        int rc = value(r, none, sizeof none);
        r->fn = saved;
        if (rc) return -1;
        skip_ws(r);
        if (r->s[r->pos] == ',') { r->pos++; continue; }
        if (r->s[r->pos] == ']') { r->pos++; return 0; }
        return fail(r, "expected ',' or ']' in an array");
    }
}

static int value(rd_t *r, char *path, size_t plen)
{
    if (++r->depth > 32) return fail(r, "nested too deeply");
    skip_ws(r);
    char c = r->s[r->pos];
    int rc = 0;
    if (c == '{') rc = object(r, path, plen);
    else if (c == '[') rc = array(r, path, plen);
    else if (c == '"') {
        char v[512];
        rc = read_string(r, v, sizeof v);
        if (!rc && r->fn) r->fn(path, 's', v, 0, 0, r->arg);
    } else if (!strncmp(r->s + r->pos, "true", 4) || !strncmp(r->s + r->pos, "false", 5)) {
        int b = c == 't';
        r->pos += b ? 4 : 5;
        if (r->fn) r->fn(path, 'b', b ? "true" : "false", b, b, r->arg);
    } else if (!strncmp(r->s + r->pos, "null", 4)) {
        r->pos += 4;
    } else if (c == '-' || isdigit((unsigned char)c)) {
        char *end;
        double d = strtod(r->s + r->pos, &end);
        char text[64];
        size_t n = (size_t)(end - (r->s + r->pos));
        snprintf(text, sizeof text, "%.*s", (int)(n < 63 ? n : 63), r->s + r->pos);
        r->pos += n;
        if (r->fn) r->fn(path, 'n', text, d, 0, r->arg);
    } else {
        rc = fail(r, "expected a value");
    }
    r->depth--;
    return rc;
}

int cf_json_parse(const char *text, cf_json_fn fn, void *arg, char *err, size_t errlen)
{
    rd_t r = {text, 0, 1, err, errlen, fn, arg, 0};
    char path[512] = "";
    skip_ws(&r);
    if (text[r.pos] != '{') return fail(&r, "the file must hold one object");
    if (value(&r, path, sizeof path)) return -1;
    skip_ws(&r);
    if (text[r.pos]) return fail(&r, "text after the closing '}'");
    return 0;
}
