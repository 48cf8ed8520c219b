package install

const helperEnv = "MYRIARCH_INSTALL_TEST_HELPER"

func helperMain() int { return 0 }
