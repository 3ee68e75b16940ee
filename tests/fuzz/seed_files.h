// SPDX-License-Identifier: MIT
//
// seed_files.h - what make_seeds and make_seeds_tb share: a seed is a name,
// the setup its input starts with, and the actions after it; WriteSeeds()
// is their main(), writing each as <corpus-dir>/<name>.
#ifndef TB5_FUZZ_SEED_FILES_H
#define TB5_FUZZ_SEED_FILES_H

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "fuzz_actions.h"

namespace tb5fuzz {

template <typename SetupT> struct Seed {
	const char *name;
	SetupT setup;
	std::function<void(Writer &)> body;
};

// main(argc, argv) of a seed maker: @start writes a seed's setup.
template <typename SetupT>
int WriteSeeds(int argc, char **argv, const std::vector<Seed<SetupT>> &seeds,
	       void (*start)(Writer &, const SetupT &))
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
		return 2;
	}
	for (const Seed<SetupT> &s : seeds) {
		Writer w;
		start(w, s.setup);
		s.body(w);
		const std::string path = std::string(argv[1]) + "/" + s.name;
		FILE *f = fopen(path.c_str(), "wb");
		if (!f || fwrite(w.data().data(), 1, w.data().size(), f) !=
				  w.data().size() || fclose(f)) {
			perror(path.c_str());
			return 1;
		}
		printf("%-24s %5zu bytes\n", s.name, w.data().size());
	}
	return 0;
}

} // namespace tb5fuzz

#endif // TB5_FUZZ_SEED_FILES_H
