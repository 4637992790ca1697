// A C++ consumer of the installed libplace: built by tests/consumer.sh with
//   c++ -std=c++11 -Wall -Wextra -Werror consumer.cc $(pkg-config --cflags --libs libplace)
// It checks that place.h compiles as C++ (extern "C", no C-only constructs), that
// the linked library is the header's version, and that a wakeup cycle works.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
#include <place.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

int check(int err, const char *what)
{
	if (err < 0) {
		std::fprintf(stderr, "consumer.cc: %s: %s (%s)\n", what, place_strerror(err),
			     place_last_error());
		std::exit(1);
	}
	return err;
}

// The runtime's task, with libplace's record embedded.
struct Task {
	place_task rec;
	int id;
};

} // namespace

int main()
{
	if (place_version() != PLACE_VERSION_HEX || place_task_size() != sizeof(place_task)) {
		std::fprintf(stderr, "consumer.cc: header %06x (task %zu bytes), library %s %06x (task %zu)\n",
			     PLACE_VERSION_HEX, sizeof(place_task), place_version_string(),
			     place_version(), place_task_size());
		return 1;
	}

	// 2 LLCs of 2 SMT2 cores: 8 CPUs, whatever machine runs the test.
	place_topo *topo = nullptr;
	check(place_topo_load(&topo, "synthetic:pack:1 l3:2 core:2 pu:2"), "place_topo_load");
	place_config cfg;
	place_config_init(&cfg);
	cfg.policy = PLACE_POLICY_SIS_CORE;
	place *p = nullptr;
	check(place_create(&p, topo, &cfg), "place_create");
	place_topo_free(topo); // the instance keeps its own copy

	const place_topo *t = place_get_topo(p);
	int nr = check(place_topo_nr_cpus(t), "place_topo_nr_cpus");
	for (int i = 0; i < nr; i++)
		check(place_worker_register(p, check(place_topo_cpu(t, i), "place_topo_cpu"), 0),
		      "place_worker_register");

	// Four new tasks land on four different idle CPUs, each claimed.
	std::vector<Task> tasks(4);
	std::vector<int> where;
	for (size_t k = 0; k < tasks.size(); k++) {
		tasks[k].id = static_cast<int>(k);
		place_task_init(&tasks[k].rec, 0, 0);
		int cpu = check(place_wakeup(p, &tasks[k].rec, PLACE_CPU_NONE, PLACE_WAKE_NEW), "place_wakeup");
		if (place_task_claimed(p, &tasks[k].rec) != cpu) {
			std::fprintf(stderr, "consumer.cc: task %zu placed on %d but not claimed there\n", k, cpu);
			return 1;
		}
		for (int w : where)
			if (w == cpu) {
				std::fprintf(stderr, "consumer.cc: CPU %d returned twice\n", cpu);
				return 1;
			}
		where.push_back(cpu);
	}
	// Their workers run them, they sleep, the workers park.
	for (size_t k = 0; k < tasks.size(); k++) {
		check(place_run_begin(p, where[k], &tasks[k].rec), "place_run_begin");
		check(place_run_end(p, where[k], &tasks[k].rec, PLACE_RUN_SLEEP), "place_run_end");
		check(place_idle_enter(p, where[k]), "place_idle_enter");
	}

	int victims[16];
	int nv = check(place_steal_order(p, where[0], victims, 16), "place_steal_order");
	place_stats st;
	check(place_stats_read(p, -1, &st), "place_stats_read");
	place_destroy(p);

	if (nv != nr - 1 || st.wakeups != tasks.size() || st.claims != tasks.size()) {
		std::fprintf(stderr, "consumer.cc: %d victims, %llu wakeups, %llu claims\n", nv,
			     static_cast<unsigned long long>(st.wakeups),
			     static_cast<unsigned long long>(st.claims));
		return 1;
	}
	std::printf("consumer.cc: libplace %s, %d CPUs, %llu wakeups claimed, %d steal victims\n",
		    place_version_string(), nr, static_cast<unsigned long long>(st.claims), nv);
	return 0;
}
