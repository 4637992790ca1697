#include <check.h>
#include <stdlib.h>
START_TEST(t_one) { ck_assert_int_eq(1, 1); }
END_TEST
int main(void)
{
	Suite *s = suite_create("topo");
	TCase *tc = tcase_create("x");
	tcase_add_test(tc, t_one);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_ENV);
	int f = srunner_ntests_failed(r);
	srunner_free(r);
	return f ? EXIT_FAILURE : EXIT_SUCCESS;
}
