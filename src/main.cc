#include "app/commands.h"

int main(int argc, char** argv) { return outbox::RunCli(argc, argv); }
