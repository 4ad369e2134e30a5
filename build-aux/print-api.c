/*
 * print-api.c - prints the Markdown API reference of ensignd's route table.
 *
 * `make api-doc` writes its output to doc/api.md; tests/unit/check_apidoc
 * fails when the committed file differs. The text is apidoc_markdown()'s,
 * the same that ensignd serves at GET /docs/api.
 */
#include <stdio.h>
#include <stdlib.h>

#include "api/apidoc.h"
#include "daemon/routes.h"

int main(void)
{
    size_t count;
    const struct route *routes = routes_table(&count);
    char *text = apidoc_markdown(routes, count);
    if (text == NULL) {
        fputs("print-api: out of memory\n", stderr);
        return EXIT_FAILURE;
    }
    int failed = fputs(text, stdout) == EOF || fflush(stdout) != 0;
    free(text);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
