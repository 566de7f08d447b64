/*
 * pmccontrol(8)'s listings, written from its manual page as a FreeBSD
 * program: -L lists the event names (the CPU's named events through
 * pmc_pmu_print_counters when pmc_pmu_enabled, else each class's names
 * from pmc_event_names_of_class), -l the PMC rows of each CPU of the
 * process's cpuset (pmc_pmcinfo). Then what pmccontrol and pmcstat ask of
 * the pmu layer: "pmu NAME IDX CLASS FLAGS CONFIG" from
 * pmc_pmu_pmcallocate of NAME (CONFIG: the event-select bits of pm_md),
 * the index's name back (pmc_pmu_event_get_by_idx), and
 * pmc_pmu_print_counter_full of it.
 *
 * usage: listing -L | -l | -p NAME
 */
#include <sys/types.h>
#include <sys/cpuset.h>
#include <sys/sysctl.h>

#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <pmc.h>

static void
list_events(void)
{
	const struct pmc_cpuinfo *ci;
	const char **names;
	unsigned int i;
	int j, n;

	if (pmc_pmu_enabled()) {
		printf("pmu\n");
		pmc_pmu_print_counters(NULL);
	}
	if (pmc_cpuinfo(&ci) != 0)
		err(EX_OSERR, "Unable to determine CPU information");
	for (i = 0; i < ci->pm_nclass; i++) {
		enum pmc_class c = ci->pm_classes[i].pm_class;

		printf("%s\n", pmc_name_of_class(c));
		if (pmc_event_names_of_class(c, &names, &n) < 0)
			err(EX_SOFTWARE, "ERROR: Cannot find information for "
			    "event class \"%s\"", pmc_name_of_class(c));
		for (j = 0; j < n; j++)
			printf("\t%s\n", names[j]);
		free(names);
	}
}

static void
list_state(void)
{
	const struct pmc_cpuinfo *ci;
	struct pmc_pmcinfo *pi;
	struct pmc_info *r;
	cpuset_t cpus;
	int cpu, ncpu, row, logical = 0;
	size_t len = sizeof(ncpu);

	if (pmc_cpuinfo(&ci) != 0)
		err(EX_OSERR, "Unable to determine CPU information");
	if (ci->pm_cputype == PMC_CPU_INTEL_PIV)
		logical = 1; /* pmccontrol: HTT siblings share PMCs */
	if (sysctlbyname("hw.ncpu", &ncpu, &len, NULL, 0) < 0)
		err(EX_OSERR, "sysctlbyname(hw.ncpu)");
	CPU_ZERO(&cpus);
	if (cpuset_getaffinity(CPU_LEVEL_WHICH, CPU_WHICH_PID, -1, sizeof(cpus),
	    &cpus) < 0)
		err(EX_OSERR, "cpuset_getaffinity");
	printf("ncpu %d %d %d %d\n", pmc_ncpu(), ncpu,
	    CPU_FFS(&cpus) - 1, logical);
	for (cpu = 0; cpu < pmc_ncpu(); cpu++) {
		if (!CPU_ISSET(cpu, &cpus))
			continue;
		if (pmc_pmcinfo(cpu, &pi) < 0) {
			if (errno == ENXIO)
				continue;
			err(EX_OSERR, "Unable to get PMC status for CPU %d", cpu);
		}
		printf("cpu %d\n", cpu);
		for (row = 0; row < pmc_npmc(cpu); row++) {
			r = &pi->pm_pmcs[row];
			printf("\t%-4d %-9s %s %s\n", row, r->pm_name,
			    pmc_name_of_class(r->pm_class),
			    r->pm_enabled ? pmc_name_of_disposition(r->pm_rowdisp) :
			    "DISABLED");
		}
		free(pi);
	}
}

static void
pmu(const char *name)
{
	struct pmc_op_pmcallocate pm;
	const char *back;
	uint64_t config = 0;
	int r, idx;

	memset(&pm, 0, sizeof(pm));
	pm.pm_caps = PMC_CAP_USER | PMC_CAP_SYSTEM;
	r = pmc_pmu_pmcallocate(name, &pm);
	if (r != 0) {
		printf("pmu %s error %d\n", name, r);
		return;
	}
#if defined(__aarch64__)
	config = pm.pm_md.pm_md_config;
#else
	if (pm.pm_class == PMC_CLASS_K8)
		config = pm.pm_md.pm_amd.pm_amd_config;
	else
		config = pm.pm_md.pm_iap.pm_iap_config;
#endif
	idx = pmc_pmu_idx_get_by_event(NULL, name);
	back = pmc_pmu_event_get_by_idx(NULL, (int)pm.pm_ev);
	printf("pmu %s %u %d %s %#x %#" PRIx64 " %s\n", name, (unsigned)pm.pm_ev,
	    idx, pmc_name_of_class(pm.pm_class), pm.pm_flags, config,
	    back != NULL ? back : "(null)");
	printf("rate %" PRIu64 "\n", pmc_pmu_sample_rate_get(name));
	if (back != NULL)
		pmc_pmu_print_counter_full(back);
}

int
main(int argc, char **argv)
{
	if (pmc_init() < 0)
		err(2, "pmc_init");
	if (argc > 1 && strcmp(argv[1], "-L") == 0)
		list_events();
	else if (argc > 1 && strcmp(argv[1], "-l") == 0)
		list_state();
	else if (argc > 2 && strcmp(argv[1], "-p") == 0)
		pmu(argv[2]);
	else
		errx(EX_USAGE, "usage: listing -L | -l | -p NAME");
	return (0);
}
