/* SPDX-License-Identifier: MIT */
/* A program built against an installed libtb5, as its users build theirs. */
#include <tb5/tb5.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 2 || strcmp(tb5_version(), argv[1])) {
		fprintf(stderr, "libtb5 %s, expected %s\n", tb5_version(),
			argc > 1 ? argv[1] : "?");
		return 1;
	}
	printf("libtb5 %s: %s\n", tb5_version(), tb5_strerror(-22));
	return 0;
}
