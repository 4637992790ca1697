#include "place.h"
int main(void) { return 0; }
