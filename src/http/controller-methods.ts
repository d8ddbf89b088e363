import type { INestApplication } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';

/** A controller class of the app and the name of one of its prototype's methods. */
export interface ControllerMethod {
  controller: new (...args: never[]) => object;
  method: string;
}

/**
 * Every method of every controller the app registered, for what reads their route metadata
 * (the OpenAPI document's query parameters, the 405 answer's route table).
 */
export function controllerMethods(app: INestApplication): ControllerMethod[] {
  const found: ControllerMethod[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as (new (...args: never[]) => object) | null;
      if (!controller) continue;
      for (const method of Object.getOwnPropertyNames(controller.prototype)) found.push({ controller, method });
    }
  }
  return found;
}
